import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { newId } from '../src/core';
import { createLogger } from '../src/observability';
import {
  OutboxRelay,
  RabbitEventSource,
  RabbitPublisher,
  SpoolingPublisher,
  amqpTopology,
} from '../src/events';
import {
  anyEvent,
  deleteAmqpTopology,
  FlakyPublisher,
  MapOutbox,
  TEST_AMQP_URL as AMQP_URL,
} from '../src/testing';
import { startTcpProxy, type TcpProxy } from '../../../test/support/tcp-proxy';

const logger = createLogger('test', 'silent');
const apiCall = () => anyEvent({ type: 'API_CALL', tenantId: 'tnt_x', resource: null, data: {} });

async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 15_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Confirms each publish after `ms`, or at once from `release()` on. */
class SlowConfirmPublisher extends FlakyPublisher {
  private released = false;
  private readonly waiting = new Set<() => void>();
  constructor(private readonly ms: number) {
    super();
  }
  override async publish(events: Parameters<FlakyPublisher['publish']>[0]) {
    if (!this.released)
      await new Promise<void>((r) => {
        const timer = setTimeout(r, this.ms);
        this.waiting.add(() => (clearTimeout(timer), r()));
      });
    await super.publish(events);
  }
  release(): void {
    this.released = true;
    for (const go of this.waiting) go();
    this.waiting.clear();
  }
}

describe('OutboxRelay', () => {
  it('when the broker refuses, then events stay in the outbox and the poll publishes each once it is back', async () => {
    const outbox = new MapOutbox();
    const publisher = new FlakyPublisher();
    const relay = new OutboxRelay(outbox, publisher, logger, {
      pollIntervalMs: 50,
      retryDelayMs: 50,
      batchSize: 7,
    });
    relay.start();
    publisher.down = true;
    const events = Array.from({ length: 40 }, apiCall);
    for (const e of events) {
      outbox.add([e]);
      await relay.publishNow([e]);
    }
    expect(outbox.pending.size).toBe(40);
    expect(publisher.confirmed).toEqual([]);
    publisher.down = false;
    await until(() => outbox.pending.size === 0, 'the outbox to drain');
    await relay.stop();
    expect(publisher.confirmed.map((e) => e.id).sort()).toEqual(events.map((e) => e.id).sort());
  });

  it('when the broker is up, then publishNow answers without waiting for the confirm, and the events are published and marked sent', async () => {
    const outbox = new MapOutbox();
    const publisher = new SlowConfirmPublisher(300);
    const relay = new OutboxRelay(outbox, publisher, logger);
    const e = apiCall();
    outbox.add([e]);
    const started = Date.now();
    await relay.publishNow([e]);
    expect(Date.now() - started).toBeLessThan(250);
    await until(() => outbox.pending.size === 0, 'the event to be marked sent');
    expect(publisher.confirmed).toEqual([e]);
  });

  it('when more publishes than the bound await their confirm, then each further writer waits for its own (at most waitMs): writers are paced by the broker', async () => {
    const outbox = new MapOutbox();
    const publisher = new SlowConfirmPublisher(60_000);
    const relay = new OutboxRelay(outbox, publisher, logger, { maxUnconfirmed: 3, publishTimeoutMs: 60_000 });
    const waited: number[] = [];
    for (let i = 0; i < 5; i++) {
      const e = apiCall();
      outbox.add([e]);
      const started = Date.now();
      await relay.publishNow([e], 200);
      waited.push(Date.now() - started);
    }
    expect(waited.slice(0, 3).every((ms) => ms < 150)).toBe(true);
    expect(waited.slice(3).every((ms) => ms >= 190)).toBe(true);
    publisher.release();
    await relay.stop();
    expect(outbox.pending.size).toBe(0);
  });

  it('when the relay stops while a publishNow waits for its confirm, then stop waits for it and nothing stays in the outbox', async () => {
    // A writer need not wait for the confirm (docs/DEPLOYMENT.md, "Delivery guarantees"): shutdown waits for it.
    const outbox = new MapOutbox();
    const publisher = new SlowConfirmPublisher(300);
    const relay = new OutboxRelay(outbox, publisher, logger, { pollIntervalMs: 60_000 });
    relay.start();
    await relay.drain();
    const e = apiCall();
    outbox.add([e]);
    void relay.publishNow([e]);
    await relay.stop();
    expect(publisher.confirmed).toEqual([e]);
    expect(outbox.pending.size).toBe(0);
  });

  it('when publishNow publishes and marks sent while a poll is reading the outbox, then the poll does not publish it again', async () => {
    // A database read takes a round trip: it answers with what was pending when it ran.
    class SlowReadOutbox extends MapOutbox {
      release?: () => void;
      readStarted = false;
      override async pendingEvents(limit: number) {
        const snapshot = await super.pendingEvents(limit);
        this.readStarted = true;
        await new Promise<void>((r) => (this.release = r));
        return snapshot;
      }
    }
    const outbox = new SlowReadOutbox();
    const publisher = new FlakyPublisher();
    const relay = new OutboxRelay(outbox, publisher, logger);
    const e = apiCall();
    outbox.add([e]);
    const poll = relay.relayAll();
    await until(() => outbox.readStarted, 'the poll to read the outbox');
    await relay.publishNow([e]);
    await until(() => outbox.pending.size === 0, 'the fast path to mark it sent');
    outbox.release!();
    await poll;
    expect(publisher.confirmed).toEqual([e]);
  });
});

describe('SpoolingPublisher (real RabbitMQ through a TCP proxy)', () => {
  const topology = amqpTopology(`test-${newId('req')}`);
  let proxy: TcpProxy;
  let dir: string;
  beforeAll(async () => {
    proxy = await startTcpProxy('127.0.0.1', Number(new URL(AMQP_URL).port || 5672));
    dir = await mkdtemp(path.join(tmpdir(), 'spool-test-'));
  });
  afterAll(async () => {
    await proxy.close();
    await rm(dir, { recursive: true, force: true });
    await deleteAmqpTopology(topology, AMQP_URL);
  });

  it('when the broker is cut, then events are spooled to disk (also across a restart) and replayed once it is back, none lost', async () => {
    const url = AMQP_URL.replace(/:\d+$/, `:${proxy.port}`);
    const spoolDir = path.join(dir, 'gateway');
    const open = async () =>
      SpoolingPublisher.open(new RabbitPublisher(url, logger, topology), {
        dir: spoolDir,
        logger,
        retryDelayMs: 100,
      });
    const first = await open();
    const before = Array.from({ length: 50 }, apiCall);
    await first.publish(before);
    expect(first.isSpooling).toBe(false);

    proxy.cut();
    const during = Array.from({ length: 300 }, apiCall);
    for (let i = 0; i < during.length; i += 20) await first.publish(during.slice(i, i + 20));
    expect(first.isSpooling).toBe(true);
    expect(first.spooledBytes).toBeGreaterThan(0);
    // A graceful stop while the broker is still away keeps the spool on disk for the next start.
    await first.close();
    expect((await readdir(spoolDir)).some((f) => f.endsWith('.ndjson'))).toBe(true);

    const second = await open();
    const after = Array.from({ length: 30 }, apiCall);
    await second.publish(after);
    // Several replay attempts fail while nothing new is published; the broker comes back later.
    // This is the outage's length (five retry delays), the scenario itself: nothing is awaited.
    await new Promise((r) => setTimeout(r, 500));
    proxy.restore();
    await until(() => !second.isSpooling, 'the spool to be replayed');
    await second.close();

    const received: string[] = [];
    const source = new RabbitEventSource({ url: AMQP_URL, logger, topology, prefetch: 200 });
    await source.startBatched(async (batch) => void received.push(...batch.map((e) => e.id)));
    const expected = [...before, ...during, ...after].map((e) => e.id);
    await until(() => new Set(received).size >= expected.length, 'every event to arrive');
    await source.stop();
    expect([...new Set(received)].sort()).toEqual([...expected].sort());
    // Spooled batches keep their order: everything published during the cut arrives before what came after.
    const firstAfter = Math.min(...after.map((e) => received.indexOf(e.id)));
    expect(Math.max(...during.map((e) => received.indexOf(e.id)))).toBeLessThan(firstAfter);
  });
});

/** About 1 KB on disk: a few fill a small spool. */
const big = () =>
  anyEvent({
    type: 'API_CALL',
    tenantId: 'tnt_x',
    resource: { type: 'account', id: 'r'.repeat(900) },
    data: {},
  });

describe('SpoolingPublisher when full', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'spool-full-test-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('when a batch does not fit in the room left, then the spool stops accepting new calls (even below seven eighths) until replay has made room', async () => {
    const broker = new FlakyPublisher(true);
    const spool = await SpoolingPublisher.open(broker, {
      dir: path.join(dir, 'verify'),
      logger,
      maxBytes: 16 * 1024,
      retryDelayMs: 50,
    });
    // About 1 KB each: ten fill 10 of 16 KB, below the seven-eighths gate.
    await spool.publish(Array.from({ length: 10 }, big));
    expect(spool.accepting()).toBe(true);
    // Eight more do not fit: refused, and kept by whoever handed them over (the journal, in the services).
    const refused = Array.from({ length: 8 }, big);
    await expect(spool.publish(refused)).rejects.toThrow('event spool full');
    // Were the gate still open, new calls' events would join the refused batch when it is handed over
    // again, and that batch would never fit: answered 2xx with their events stuck, the gate never closing.
    expect(spool.accepting()).toBe(false);

    broker.down = false;
    await until(() => !spool.isSpooling, 'the spool to be replayed');
    expect(spool.accepting()).toBe(true);
    await spool.publish(refused);
    await spool.close();
    expect(broker.confirmed).toHaveLength(18);
  });

  it("when batches wait for the disk (each append is fsync'd in turn), then they count against the bound at once: a slow disk cannot let new calls in past it", async () => {
    const spool = await SpoolingPublisher.open(new FlakyPublisher(true), {
      dir: path.join(dir, 'gateway'),
      logger,
      maxBytes: 16 * 1024,
      retryDelayMs: 60_000,
    });
    await spool.publish([big()]);
    expect(spool.isSpooling).toBe(true);
    // Twenty more (about 20 KB) handed over at once, none of them on disk yet.
    const queued = Array.from({ length: 20 }, () => spool.publish([big()]));
    expect(spool.accepting()).toBe(false);
    const settled = await Promise.allSettled(queued);
    expect(settled.filter((s) => s.status === 'rejected').length).toBeGreaterThan(0);
    await spool.close();
  });
});
