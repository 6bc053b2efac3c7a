import amqp from 'amqplib';
import { RabbitEventSource, RabbitPublisher, amqpTopology, buildEvent, createLogger, newId, type AuditEvent } from '../src';

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const logger = createLogger('test', 'silent');

describe('RabbitEventSource.startBatched (real broker)', () => {
  const topology = amqpTopology(`test-${newId('req')}`);
  afterAll(async () => {
    const c = await amqp.connect(AMQP_URL);
    const ch = await c.createChannel();
    await ch.deleteQueue(topology.auditQueue);
    await ch.deleteQueue(topology.auditDeadLetterQueue);
    await ch.deleteExchange(topology.exchange);
    await ch.deleteExchange(topology.deadLetterExchange);
    await c.close();
  });

  it('when many events wait in the queue, then they arrive in batches no larger than maxBatch, each exactly once, and the queue drains', async () => {
    const publisher = new RabbitPublisher(AMQP_URL, logger, topology);
    const events = Array.from({ length: 120 }, () =>
      buildEvent({ type: 'API_CALL', tenantId: 'tnt_x', resource: null, data: {} }),
    );
    await publisher.publish(events);

    const source = new RabbitEventSource({ url: AMQP_URL, logger, topology, prefetch: 200 });
    const batches: AuditEvent[][] = [];
    await source.startBatched(async (batch) => void batches.push(batch), { maxBatch: 50, maxDelayMs: 500 });
    const deadline = Date.now() + 20_000;
    while (batches.flat().length < events.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await source.stop();
    await publisher.close();

    const ids = batches.flat().map((e) => e.id);
    expect(ids.sort()).toEqual(events.map((e) => e.id).sort());
    expect(Math.max(...batches.map((b) => b.length))).toBeLessThanOrEqual(50);
    expect(batches.length).toBeLessThan(events.length);

    const c = await amqp.connect(AMQP_URL);
    const ch = await c.createChannel();
    const { messageCount } = await ch.checkQueue(topology.auditQueue);
    await c.close();
    expect(messageCount).toBe(0);
  });
});
