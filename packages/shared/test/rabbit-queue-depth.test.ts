import { createLogger } from '../src/observability';
import { RabbitEventSource } from '../src/events';
import { TEST_AMQP_URL, deleteAmqpTopology, testTopology } from '../src/testing';
import { startTcpProxy, type TcpProxy } from '../../../test/support/tcp-proxy';

/** The audit_queue_messages gauge asks the broker on each scrape (docs/DEPLOYMENT.md, "Metrics"). */
describe('the audit queue depth on the real broker, through a proxy', () => {
  const topology = testTopology();
  let proxy: TcpProxy;
  let source: RabbitEventSource;

  beforeAll(async () => {
    proxy = await startTcpProxy('127.0.0.1', Number(new URL(TEST_AMQP_URL).port || 5672));
    source = new RabbitEventSource({
      url: TEST_AMQP_URL.replace(/:\d+$/, `:${proxy.port}`),
      logger: createLogger('test', 'silent'),
      topology,
    });
    await source.startBatched(async () => undefined);
  });

  afterAll(async () => {
    proxy.restore();
    await source.stop();
    await proxy.close();
    await deleteAmqpTopology(topology, TEST_AMQP_URL);
  });

  it('when the broker hangs (connection open, nothing answered), then the depth check gives up after 1 s instead of holding the scrape, and answers again once the broker does', async () => {
    expect(await source.queueDepth()).toBe(0);
    proxy.hang();
    const started = Date.now();
    const during = await source.queueDepth().then(
      (depth) => `answered ${depth}`,
      (err: unknown) => String(err),
    );
    const waited = Date.now() - started;
    proxy.restore();
    expect(during).toMatch(/timed out after 1000 ms/);
    expect(waited).toBeLessThan(3_000);
    expect(await source.queueDepth()).toBe(0);
  });
});
