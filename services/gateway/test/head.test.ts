import { listen, type RunningServer } from '@mandate/shared/http';
import { closeUpstreams, keysOf, standInService, testGateway, upstreamsAt } from './helpers';
import type { GatewayApp, Upstreams } from '../src/app';
import { ROUTES } from '../src/routes/table';

/** docs/API.md#paths-and-versions: HEAD of every public GET is that GET without its body. */
describe('HEAD on the public GET routes', () => {
  let upstream: RunningServer;
  let upstreams: Upstreams;
  let gateway: GatewayApp;
  let base: string;

  beforeAll(async () => {
    const app = standInService();
    app.get('/{*rest}', (_req, res) => {
      res.set('Cache-Control', 'public, max-age=60').json({ keys: [] });
    });
    upstream = await listen(app, 0);
    upstreams = upstreamsAt(upstream.url);
    gateway = testGateway({ upstreams, keys: keysOf({}), openApiDocument: () => ({ openapi: '3.1.0' }) });
    base = (await gateway.start(0)).url;
  });
  afterAll(async () => {
    await gateway.stop();
    await closeUpstreams(upstreams);
    await upstream.close();
  });

  const publicGets = ROUTES.filter((r) => r.auth === 'public' && r.method === 'GET');
  const concrete = (p: string) => p.replace(/:[A-Za-z_]+/g, 'x_1');

  it('when the table is read, then the status lists, the JWKS and the OpenAPI document are public GETs', () => {
    expect(publicGets.map((r) => r.path)).toEqual(
      expect.arrayContaining(['/v1/status-lists/:list_id', '/v1/.well-known/jwks.json', '/v1/openapi.json']),
    );
  });

  it.each(publicGets.map((r) => [r.path]))(
    'when HEAD %s is sent, then it answers as the GET does, without a body',
    async (routePath) => {
      const get = await fetch(base + concrete(routePath));
      await get.arrayBuffer();
      const head = await fetch(base + concrete(routePath), { method: 'HEAD' });
      expect(head.status).toBe(get.status);
      expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
      expect((await head.arrayBuffer()).byteLength).toBe(0);
    },
  );

  it('when HEAD is sent to a route that takes a credential, then 405 names GET', async () => {
    const res = await fetch(`${base}/v1/mandates`, { method: 'HEAD' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toContain('GET');
  });
});
