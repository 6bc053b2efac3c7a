import { newId } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { RabbitPublisher, amqpTopology } from '@mandate/shared/events';
import { anyEvent, deleteAmqpTopology, TEST_AMQP_URL as AMQP_URL } from '@mandate/shared/testing';
import { RabbitSubscriber } from '../src/auth/rabbit-subscriber';

const logger = createLogger('test', 'silent');

/** The gateway's view of credential events: its own queue, bound to the types it asked for (real broker). */
describe('RabbitSubscriber (real broker)', () => {
  it('when key events arrive in a batch message, then a per-type subscriber receives each of them', async () => {
    const t = amqpTopology(`test-${newId('req')}`);
    const subscriber = new RabbitSubscriber({
      url: AMQP_URL,
      logger,
      topology: t,
      eventTypes: ['API_KEY_REVOKED'],
      name: 'test',
    });
    const got: string[] = [];
    await subscriber.start(async (e) => void got.push(e.id));
    const publisher = new RabbitPublisher(AMQP_URL, logger, t);
    const revoked = Array.from({ length: 3 }, (_, i) =>
      anyEvent({
        type: 'API_KEY_REVOKED',
        tenantId: 'tnt_x',
        resource: { type: 'api_key', id: `key_${i}` },
        data: {},
      }),
    );
    const other = anyEvent({ type: 'API_CALL', tenantId: 'tnt_x', resource: null, data: {} });
    await publisher.publish([revoked[0]!, other, revoked[1]!, revoked[2]!]);
    const deadline = Date.now() + 20_000;
    while (got.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await subscriber.stop();
    await publisher.close();
    await deleteAmqpTopology(t, AMQP_URL);
    expect(got).toEqual(revoked.map((e) => e.id));
  });
});
