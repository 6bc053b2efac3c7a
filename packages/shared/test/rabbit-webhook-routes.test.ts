import { newId } from '../src/core';
import { createLogger } from '../src/observability';
import { RabbitEventSource, RabbitPublisher, amqpTopology, type AuditEvent } from '../src/events';
import { anyEvent, deleteAmqpTopology, TEST_AMQP_URL as AMQP_URL } from '../src/testing';

const logger = createLogger('test', 'silent');
const ofType = (type: 'API_CALL' | 'MANDATE_CREATED' | 'VERIFICATION_PERFORMED') =>
  anyEvent({ type, tenantId: 'tnt_x', resource: null, data: {} });

/**
 * The webhook queue gets the events of the types endpoints subscribe to, not every event
 * (docs/DECISIONS.md, "The webhook queue gets the subscribed types"). Events of one publisher
 * reach a queue in publish order, so once the last one published has arrived, an earlier one of
 * a type the queue is bound to would have arrived before it: what is missing then was not routed.
 */
describe('the webhook queue, bound per subscribed type (real broker)', () => {
  const topology = amqpTopology(`test-${newId('req')}`);
  let publisher: RabbitPublisher;
  let source: RabbitEventSource | undefined;
  let received: AuditEvent[];

  beforeEach(() => {
    publisher = new RabbitPublisher(AMQP_URL, logger, topology);
    received = [];
  });

  afterEach(async () => {
    await source?.stop();
    source = undefined;
    await publisher.close();
    await deleteAmqpTopology(topology, AMQP_URL);
  });

  async function consume(routes?: () => Promise<readonly string[]>): Promise<RabbitEventSource> {
    source = new RabbitEventSource({ url: AMQP_URL, logger, topology, queue: 'webhooks', routes });
    await source.startBatched(async (batch) => void received.push(...batch), { maxBatch: 10, maxDelayMs: 5 });
    return source;
  }

  async function until(event: AuditEvent): Promise<string[]> {
    const deadline = Date.now() + 10_000;
    while (!received.some((e) => e.id === event.id)) {
      if (Date.now() > deadline) throw new Error(`${event.type} ${event.id} never reached the webhook queue`);
      await new Promise((r) => setTimeout(r, 10));
    }
    return received.map((e) => e.type);
  }

  it('when the endpoints subscribe to MANDATE_CREATED, then the queue gets those and no API_CALL or VERIFICATION_PERFORMED', async () => {
    await consume(async () => ['MANDATE_CREATED']);
    for (const event of [ofType('API_CALL'), ofType('VERIFICATION_PERFORMED')])
      await publisher.publish([event]);
    const wanted = ofType('MANDATE_CREATED');
    await publisher.publish([wanted]);
    expect(await until(wanted)).toEqual(['MANDATE_CREATED']);
  });

  it('when no endpoint subscribes to anything, then the queue gets nothing until addRoutes binds a type, and that type from then on', async () => {
    const consuming = await consume(async () => []);
    await publisher.publish([ofType('API_CALL')]);
    await consuming.addRoutes(['VERIFICATION_PERFORMED']);
    await publisher.publish([ofType('API_CALL')]);
    const wanted = ofType('VERIFICATION_PERFORMED');
    await publisher.publish([wanted]);
    expect(await until(wanted)).toEqual(['VERIFICATION_PERFORMED']);
  });

  it('when an endpoint takes "*", then every type reaches the queue', async () => {
    await consume(async () => ['*']);
    const events = [ofType('API_CALL'), ofType('VERIFICATION_PERFORMED'), ofType('MANDATE_CREATED')];
    for (const event of events) await publisher.publish([event]);
    expect(await until(events[2]!)).toEqual(['API_CALL', 'VERIFICATION_PERFORMED', 'MANDATE_CREATED']);
  });

  it('when routes are added before the consumer has connected, then they are bound on a connection of their own', async () => {
    const idle = new RabbitEventSource({
      url: AMQP_URL,
      logger,
      topology,
      queue: 'webhooks',
      routes: async () => [],
    });
    await idle.addRoutes(['MANDATE_CREATED']);
    await consume(async () => []);
    await publisher.publish([ofType('API_CALL')]);
    const wanted = ofType('MANDATE_CREATED');
    await publisher.publish([wanted]);
    expect(await until(wanted)).toEqual(['MANDATE_CREATED']);
  });

  it('when the broker cannot be reached, then addRoutes rejects as 503 SERVICE_UNAVAILABLE, so the endpoint change is refused', async () => {
    const away = new RabbitEventSource({
      url: 'amqp://guest:guest@127.0.0.1:1',
      logger,
      topology,
      queue: 'webhooks',
    });
    await expect(away.addRoutes(['MANDATE_CREATED'])).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
  });
});
