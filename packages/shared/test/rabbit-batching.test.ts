import amqp from 'amqplib';
import { newId } from '../src/core';
import { createLogger } from '../src/observability';
import {
  RabbitEventSource,
  RabbitPublisher,
  amqpTopology,
  parseEventMessage,
  type AuditEvent,
} from '../src/events';
import { groupForMessages } from '../src/events/bus/encoding';
import { anyEvent, auditQueueDepth, deleteAmqpTopology, TEST_AMQP_URL as AMQP_URL } from '../src/testing';

const logger = createLogger('test', 'silent');
const apiCalls = (count: number) =>
  Array.from({ length: count }, () =>
    anyEvent({ type: 'API_CALL', tenantId: 'tnt_x', resource: null, data: {} }),
  );

describe('RabbitEventSource.startBatched (real broker)', () => {
  const topology = amqpTopology(`test-${newId('req')}`);
  afterAll(() => deleteAmqpTopology(topology, AMQP_URL));

  it('when many events wait in the queue, then they arrive in batches no larger than maxBatch, each exactly once, and the queue drains', async () => {
    const publisher = new RabbitPublisher(AMQP_URL, logger, topology);
    const events = apiCalls(120);
    await publisher.publish(events);

    const source = new RabbitEventSource({ url: AMQP_URL, logger, topology, prefetch: 200 });
    const batches: AuditEvent[][] = [];
    await source.startBatched(async (batch) => void batches.push(batch), { maxBatch: 50, maxDelayMs: 500 });
    const deadline = Date.now() + 20_000;
    while (batches.flat().length < events.length && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    await source.stop();
    await publisher.close();

    const ids = batches.flat().map((e) => e.id);
    expect(ids.sort()).toEqual(events.map((e) => e.id).sort());
    expect(Math.max(...batches.map((b) => b.length))).toBeLessThanOrEqual(50);
    expect(batches.length).toBeLessThan(events.length);

    expect(await auditQueueDepth(topology)).toBe(0);
  });

  it('when a batch of events is published, then the queue holds one message per event type, each a JSON array in order', async () => {
    const t = amqpTopology(`test-${newId('req')}`);
    const publisher = new RabbitPublisher(AMQP_URL, logger, t);
    const calls = apiCalls(30);
    const revoked = anyEvent({
      type: 'API_KEY_REVOKED',
      tenantId: 'tnt_x',
      resource: { type: 'api_key', id: 'key_x' },
      data: {},
    });
    await publisher.publish([...calls.slice(0, 10), revoked, ...calls.slice(10)]);
    await publisher.close();
    const c = await amqp.connect(AMQP_URL);
    const ch = await c.createChannel();
    try {
      const first = await ch.get(t.auditQueue, { noAck: true });
      const second = await ch.get(t.auditQueue, { noAck: true });
      expect(first && first.fields.routingKey).toBe('audit.API_CALL');
      expect(first && JSON.parse(first.content.toString()).map((e: AuditEvent) => e.id)).toEqual(
        calls.map((e) => e.id),
      );
      expect(first && first.properties.deliveryMode).toBe(2);
      // A lone event of its type travels as the event itself, routed by its type.
      expect(second && second.fields.routingKey).toBe('audit.API_KEY_REVOKED');
      expect(second && JSON.parse(second.content.toString())).toEqual(revoked);
      expect(await ch.get(t.auditQueue, { noAck: true })).toBe(false);
    } finally {
      await c.close();
      await deleteAmqpTopology(t, AMQP_URL);
    }
  });

  it('when a batch message holds invalid elements, then the valid events are handled, each invalid element is dead-lettered alone, and the message is acked', async () => {
    const publisher = new RabbitPublisher(AMQP_URL, logger, topology);
    await publisher.connect();
    const good = apiCalls(3);
    const c = await amqp.connect(AMQP_URL);
    const ch = await c.createConfirmChannel();
    const body = JSON.stringify([good[0], { id: 'evt_bogus', type: 'NOPE' }, good[1], 42, good[2]]);
    ch.publish(topology.exchange, 'audit.API_CALL', Buffer.from(body), { persistent: true });
    await ch.waitForConfirms();

    const source = new RabbitEventSource({ url: AMQP_URL, logger, topology });
    const got: AuditEvent[] = [];
    await source.startBatched(async (batch) => void got.push(...batch), { maxBatch: 2, maxDelayMs: 10 });
    const dead: string[] = [];
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && (got.length < 3 || dead.length < 2)) {
      const msg = await ch.get(topology.auditDeadLetterQueue, { noAck: true });
      if (msg) dead.push(msg.content.toString());
      else await new Promise((r) => setTimeout(r, 20));
    }
    await source.stop();
    await publisher.close();
    try {
      expect(got.map((e) => e.id)).toEqual(good.map((e) => e.id));
      expect(dead.sort()).toEqual(['42', '{"id":"evt_bogus","type":"NOPE"}']);
      expect((await ch.checkQueue(topology.auditQueue)).messageCount).toBe(0);
    } finally {
      await c.close();
    }
  });

  it('when a write of part of a batch message fails, then the message is redelivered whole (all its events, in order) and the store ends with each event exactly once', async () => {
    const publisher = new RabbitPublisher(AMQP_URL, logger, topology);
    const events = apiCalls(10);
    // One type: the publisher sends the ten as one message, which the consumer writes in batches of four.
    await publisher.publish(events);
    const source = new RabbitEventSource({ url: AMQP_URL, logger, topology, retryDelayMs: 20 });
    const batches: { ids: string[]; failed: boolean }[] = [];
    // A store that keeps each event id once, as the audit store does: how many writes each id got.
    const stored = new Map<string, { event: AuditEvent; writes: number }>();
    await source.startBatched(
      async (batch) => {
        // The second batch of the first delivery fails once.
        const failed = batches.length === 1;
        batches.push({ ids: batch.map((e) => e.id), failed });
        if (failed) throw new Error('store briefly down');
        for (const e of batch)
          stored.set(e.id, {
            event: stored.get(e.id)?.event ?? e,
            writes: (stored.get(e.id)?.writes ?? 0) + 1,
          });
      },
      { maxBatch: 4, maxDelayMs: 10 },
    );
    const deadline = Date.now() + 10_000;
    while ((batches.length < 6 || (await auditQueueDepth(topology)) > 0) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    await source.stop();
    await publisher.close();

    const ids = events.map((e) => e.id);
    const [first, second, third] = [ids.slice(0, 4), ids.slice(4, 8), ids.slice(8)];
    // The first delivery: [0–3] written, [4–7] failed, [8–9] written; then the whole message again.
    expect(batches).toEqual([
      { ids: first, failed: false },
      { ids: second, failed: true },
      { ids: third, failed: false },
      { ids: first, failed: false },
      { ids: second, failed: false },
      { ids: third, failed: false },
    ]);
    // Every event stored once, exactly as published; the ones written in both deliveries were written twice.
    expect(ids.map((id) => stored.get(id)?.event)).toEqual(events);
    expect(stored.size).toBe(events.length);
    expect(ids.map((id) => stored.get(id)!.writes)).toEqual(ids.map((_, i) => (i >= 4 && i < 8 ? 1 : 2)));
    expect(await auditQueueDepth(topology)).toBe(0);
  });
});

describe('the message contract', () => {
  const event = (type: AuditEvent['type']) => anyEvent({ type, tenantId: 'tnt_x', resource: null, data: {} });

  it('when a batch mixes types, then each type is one group, in order of first appearance, keeping order within a type', () => {
    const [a1, b1, a2, c1, b2] = [
      event('API_CALL'),
      event('API_KEY_REVOKED'),
      event('API_CALL'),
      event('MANDATE_CREATED'),
      event('API_KEY_REVOKED'),
    ];
    expect(groupForMessages([a1!, b1!, a2!, c1!, b2!])).toEqual([[a1, a2], [b1, b2], [c1]]);
  });

  it('when a batch is larger than one message may carry, then it is split', () => {
    const many = Array.from({ length: 1100 }, () => event('API_CALL'));
    expect(groupForMessages(many).map((g) => g.length)).toEqual([500, 500, 100]);
  });

  it('when a message body is one event, an array, or neither, then it is read accordingly', () => {
    const e = event('API_CALL');
    expect(parseEventMessage(Buffer.from(JSON.stringify(e)))).toEqual({
      events: [e],
      invalid: [],
      batch: false,
    });
    expect(parseEventMessage(Buffer.from(JSON.stringify([e, { x: 1 }])))).toMatchObject({
      events: [e],
      invalid: [{ element: { x: 1 } }],
      batch: true,
    });
    expect(parseEventMessage(Buffer.from('[]'))).toBeNull();
    expect(parseEventMessage(Buffer.from('not json'))).toBeNull();
    expect(parseEventMessage(Buffer.from('{"x":1}'))).toMatchObject({
      events: [],
      invalid: [{ element: { x: 1 } }],
    });
  });
});
