import type { IncomingMessage } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { listen, type RunningServer } from '@mandate/shared/http';
import type { AuditEvent, EventPublisher } from '@mandate/shared/events';
import { closeUpstreams, keysOf, standInService, testGateway, upstreamsAt } from './helpers';
import type { GatewayApp, Upstreams } from '../src/app';
import type { ResolvedKey } from '../src/auth/key-resolver';

// The collector on demand, without starting jest's workers with --expose-gc.
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as () => void;

/**
 * A call's API_CALL waits in the publisher (its batch window, then the broker's confirm) long
 * after the answer went out. What waits with it must be the event alone: a call held until the
 * publisher settles outlives the collector's young generation, and at a few hundred calls a second
 * that is every call's objects promoted (docs/PERFORMANCE.md, round 14).
 */
describe('an API_CALL waiting in the publisher', () => {
  const waiting: AuditEvent[] = [];
  const settle: (() => void)[] = [];
  /** A publisher whose window stays open until the test ends, as a batcher's does for its window. */
  const publisher: EventPublisher = {
    kind: 'in-process',
    publish: (events) => {
      waiting.push(...events);
      return new Promise<void>((resolve) => settle.push(resolve));
    },
    close: async () => undefined,
  };
  const key: ResolvedKey = {
    key_id: 'key_retention',
    tenant_id: 'tnt_01jaaaaaaaaaaaaaaaaaaaaaaa',
    scopes: ['mandates:read'],
    status: 'active',
    plan: 'beta',
  };
  let upstream: RunningServer;
  let upstreams: Upstreams;
  let gateway: GatewayApp;
  let running: RunningServer;

  beforeAll(async () => {
    const app = standInService();
    app.all('/{*rest}', (_req, res) => void res.json({ ok: true }));
    upstream = await listen(app, 0);
    upstreams = upstreamsAt(upstream.url);
    gateway = testGateway({ publisher, upstreams, keys: keysOf({ 'secret-retention': key }) });
    running = await gateway.start(0);
  });
  afterAll(async () => {
    for (const resolve of settle) resolve();
    await gateway.stop();
    await closeUpstreams(upstreams);
    await upstream.close();
  });

  it('when its call has been answered, then the call is not kept alive by it', async () => {
    const requests: WeakRef<IncomingMessage>[] = [];
    running.server.prependListener('request', (req: IncomingMessage) => requests.push(new WeakRef(req)));
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${running.url}/v1/mandates/mnd_1`, {
        headers: { authorization: `Bearer ${key.tenant_id}:secret-retention`, connection: 'close' },
      });
      await res.arrayBuffer();
      expect(res.status).toBe(200);
    }
    expect(waiting).toHaveLength(5);
    // A WeakRef holds its target until the job that made it ends; then collect twice.
    await new Promise((r) => setTimeout(r, 50));
    collect();
    await new Promise((r) => setTimeout(r, 50));
    collect();
    expect(requests).toHaveLength(5);
    expect(requests.filter((ref) => ref.deref() !== undefined)).toHaveLength(0);
  });
});
