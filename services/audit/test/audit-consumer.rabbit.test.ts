import amqp from 'amqplib';
import { newId } from '@mandate/shared/core';
import { createLogger, processMetrics } from '@mandate/shared/observability';
import { RabbitEventSource, RabbitPublisher, amqpTopology, type AuditEvent } from '@mandate/shared/events';
import {
  callService,
  callerFor,
  deleteAmqpTopology,
  TEST_INTERNAL_SECRET,
  TEST_AMQP_URL as AMQP_URL,
} from '@mandate/shared/testing';
import { createApp } from '../src/app';
import { auditConfig } from '../src/config';
import { startAuditConsumer } from '../src/consumers/audit-consumer';
import type { EventStore } from '../src/store/event-store';
import { MemoryEventStore } from '../src/store/memory-event-store';
import { wire } from '../src/wiring';
import { buildAuditEvent } from './factories';

const logger = createLogger('audit-test', 'silent');

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Each describe gets its own namespace on the shared broker and deletes it afterwards. */
function isolatedTopology() {
  const topology = amqpTopology(`test-${newId('req')}`);
  const cleanup = () => deleteAmqpTopology(topology, AMQP_URL);
  return { topology, cleanup };
}

async function publishRaw(exchange: string, routingKey: string, body: string): Promise<void> {
  const c = await amqp.connect(AMQP_URL);
  const ch = await c.createConfirmChannel();
  ch.publish(exchange, routingKey, Buffer.from(body), { persistent: true });
  await ch.waitForConfirms();
  await c.close();
}

describe('audit consumer (real RabbitMQ)', () => {
  const { topology, cleanup } = isolatedTopology();
  afterAll(cleanup);

  it('when valid events (one redelivered), and an invalid message are published, then each valid event is stored once and the invalid one is dead-lettered', async () => {
    const tenant = newId('tnt');
    const publisher = new RabbitPublisher(AMQP_URL, logger, topology);
    await publisher.connect(); // declares the topology before the raw publish below
    const events = Array.from({ length: 5 }, (_, i) => buildAuditEvent(tenant, { data: { i } }));
    const redelivered = events[2]!;

    // The invalid message goes first: it must not stall the valid ones behind it.
    await publishRaw(topology.exchange, 'audit.MANDATE_CREATED', '{"id":"evt_bogus","type":"NOPE"}');
    await publisher.publish(events);
    await publisher.publish([redelivered]);

    const store = new MemoryEventStore();
    const source = new RabbitEventSource({ url: AMQP_URL, logger, topology, prefetch: 10 });
    const consumer = await startAuditConsumer(source, store, logger);
    try {
      await waitFor(async () => consumer.handled >= events.length + 1, 'every delivery to be handled');
      const stored = await store.list(tenant, { limit: 100 });
      expect(stored.map((e) => e.id).sort()).toEqual(events.map((e) => e.id).sort());
      expect(stored.find((e) => e.id === redelivered.id)).toEqual({
        ...redelivered,
        seq: expect.any(Number),
      });

      const c = await amqp.connect(AMQP_URL);
      const ch = await c.createChannel();
      const dead = await ch.get(topology.auditDeadLetterQueue, { noAck: true });
      expect(dead && dead.content.toString()).toBe('{"id":"evt_bogus","type":"NOPE"}');
      // Nothing is left behind in the work queue.
      expect((await ch.checkQueue(topology.auditQueue)).messageCount).toBe(0);
      await c.close();
    } finally {
      await consumer.stop();
      await publisher.close();
    }
    expect(consumer.state).toBe('stopped');
  });

  it('when a batch message with an invalid element is delivered twice, then its valid events are stored once and the invalid element is dead-lettered', async () => {
    const tenant = newId('tnt');
    const publisher = new RabbitPublisher(AMQP_URL, logger, topology);
    await publisher.connect();
    const events = Array.from({ length: 4 }, (_, i) =>
      buildAuditEvent(tenant, { type: 'API_CALL', data: { i } }),
    );
    const body = JSON.stringify([events[0], events[1], { id: 'evt_bogus' }, events[2], events[3]]);
    // The same batch twice: what a redelivery after a crash between write and ack looks like.
    await publishRaw(topology.exchange, 'audit.API_CALL', body);
    await publishRaw(topology.exchange, 'audit.API_CALL', body);

    const store = new MemoryEventStore();
    const source = new RabbitEventSource({ url: AMQP_URL, logger, topology });
    const consumer = await startAuditConsumer(source, store, logger, { maxBatch: 3, maxDelayMs: 10 });
    const c = await amqp.connect(AMQP_URL);
    const ch = await c.createChannel();
    try {
      await waitFor(async () => consumer.handled >= 2 * events.length, 'both deliveries to be written');
      const stored = await store.list(tenant, { limit: 100 });
      expect(stored.map((e) => e.id).sort()).toEqual(events.map((e) => e.id).sort());
      const dead: string[] = [];
      await waitFor(async () => {
        const msg = await ch.get(topology.auditDeadLetterQueue, { noAck: true });
        if (msg) dead.push(msg.content.toString());
        return dead.length >= 2;
      }, 'the invalid elements to be dead-lettered');
      expect(dead).toEqual(['{"id":"evt_bogus"}', '{"id":"evt_bogus"}']);
      await waitFor(
        async () => (await ch.checkQueue(topology.auditQueue)).messageCount === 0,
        'the queue to drain',
      );
    } finally {
      await c.close();
      await consumer.stop();
      await publisher.close();
    }
  });

  it('when events write their instants in other forms, then they are stored as audit serves instants and the lag counts from the newest', async () => {
    const tenant = newId('tnt');
    const publisher = new RabbitPublisher(AMQP_URL, logger, topology);
    await publisher.connect();
    // Far in the future, so that no other test's events in this process are newer.
    const written = [
      '2099-01-02T03:04:05Z',
      '2099-01-02T03:04:05.1Z',
      '2099-01-01T00:00:00.000Z',
      '2099-01-03T00:00:00.000Z',
    ];
    const events = written.map((occurred_at) => ({ ...buildAuditEvent(tenant), occurred_at }));
    await publishRaw(topology.exchange, 'audit.MANDATE_CREATED', JSON.stringify(events));

    const store = new MemoryEventStore();
    const source = new RabbitEventSource({ url: AMQP_URL, logger, topology });
    const consumer = await startAuditConsumer(source, store, logger);
    try {
      await waitFor(async () => consumer.handled >= events.length, 'the events to be written');
      const stored = await Promise.all(events.map((e) => store.get(tenant, e.id)));
      expect(stored.map((e) => e?.occurred_at)).toEqual([
        '2099-01-02T03:04:05.000Z',
        '2099-01-02T03:04:05.100Z',
        '2099-01-01T00:00:00.000Z',
        '2099-01-03T00:00:00.000Z',
      ]);
      expect(processMetrics().auditLastOccurredMs).toBe(Date.parse('2099-01-03T00:00:00.000Z'));
    } finally {
      await consumer.stop();
      await publisher.close();
    }
  });

  it('when the store fails a write, then the message is offered again and stored exactly once', async () => {
    const tenant = newId('tnt');
    const memory = new MemoryEventStore();
    // The consumer writes with insertMany (one per batch): its first write fails.
    const writes: string[][] = [];
    const flaky: EventStore = {
      kind: 'memory',
      insert: (event: AuditEvent) => memory.insert(event),
      insertMany: async (events) => {
        writes.push(events.map((e) => e.id));
        if (writes.length === 1) throw new Error('store briefly down');
        return memory.insertMany(events);
      },
      get: (t, id) => memory.get(t, id),
      list: (t, q) => memory.list(t, q),
      count: (t, q) => memory.count(t, q),
      listByResource: (t, r, limit) => memory.listByResource(t, r, limit),
      readByResource: (t, r) => memory.readByResource(t, r),
      countVerifications: (t, q) => memory.countVerifications(t, q),
      ping: () => memory.ping(),
    };
    const source = new RabbitEventSource({ url: AMQP_URL, logger, topology, retryDelayMs: 50 });
    const consumer = await startAuditConsumer(source, flaky, logger);
    const publisher = new RabbitPublisher(AMQP_URL, logger, topology);
    try {
      const event = buildAuditEvent(tenant);
      await publisher.publish([event]);
      await waitFor(async () => (await memory.get(tenant, event.id)) !== null, 'the retried write');
      expect((await memory.list(tenant, { limit: 10 })).map((e) => e.id)).toEqual([event.id]);
      // Offered again after the failed write: the same event, written a second time.
      expect(writes).toEqual([[event.id], [event.id]]);
    } finally {
      await consumer.stop();
      await publisher.close();
    }
  });
});

describe('audit service wired to RabbitMQ', () => {
  const { topology, cleanup } = isolatedTopology();
  const namespace = topology.exchange.replace(/\.events$/, '');
  afterAll(cleanup);

  it('when AMQP_URL is configured, then published events become visible on GET /v1/events', async () => {
    const config = auditConfig({
      AMQP_URL,
      AMQP_NAMESPACE: namespace,
      INTERNAL_TOKEN_SECRET: TEST_INTERNAL_SECRET,
      AUDIT_PREFETCH: '50',
    });
    const wired = await wire(config, logger);
    expect(wired.deps.source.kind).toBe('rabbitmq');
    expect(wired.deps.store.kind).toBe('memory');
    const service = createApp(wired.deps);
    const server = await service.start();
    const publisher = new RabbitPublisher(AMQP_URL, logger, topology);
    try {
      const tenant = newId('tnt');
      const event = buildAuditEvent(tenant, {
        type: 'API_CALL',
        data: { method: 'GET', route: '/v1/mandates', status: 200 },
      });
      await publisher.publish([event]);
      let body: unknown;
      await waitFor(async () => {
        const res = await callService(server.url, 'GET', '/v1/events', { caller: callerFor(tenant) });
        body = res.body;
        return res.status === 200 && res.body.data.length === 1;
      }, 'the event to be listed');
      expect(body).toEqual({ data: [{ ...event, seq: 1 }], has_more: false, next_cursor: null });
      const ready = await callService(server.url, 'GET', '/readyz', { caller: null });
      expect(ready).toMatchObject({
        status: 200,
        body: { status: 'ready', checks: { consumer: 'ok', store: 'ok' } },
      });
    } finally {
      await publisher.close();
      await service.stop();
      await wired.close();
    }
  });
});
