import { connect } from 'node:net';
import { ServiceClient, listen, callerOf, type RunningServer } from '@mandate/shared/http';
import { CapturingPublisher } from '@mandate/shared/testing';
import { eventually } from '../../../test/support/eventually';
import { closeUpstreams, keysOf, standInService, testGateway, upstreamsAt } from './helpers';
import type { GatewayApp, Upstreams } from '../src/app';
import type { ResolvedKey } from '../src/auth/key-resolver';

const TENANT_A = 'tnt_01jaaaaaaaaaaaaaaaaaaaaaaa';
const TENANT_B = 'tnt_01jbbbbbbbbbbbbbbbbbbbbbbb';
const OPERATOR_TOKEN = 'operator-secret-for-tests';

const keys: Record<string, ResolvedKey> = {
  'secret-all': {
    key_id: 'key_all',
    tenant_id: TENANT_A,
    scopes: ['mandates:read', 'mandates:write', 'verify', 'events:read', 'tenants:admin'],
    status: 'active',
    plan: 'beta',
  },
  'secret-verify': {
    key_id: 'key_verify',
    tenant_id: TENANT_A,
    scopes: ['verify'],
    status: 'active',
    plan: 'beta',
  },
};
const stubKeys = keysOf(keys);

/** A stand-in service that echoes what reached it, behind the real internal-token check. */
async function echoService(): Promise<RunningServer> {
  const app = standInService();
  app.all('/{*rest}', (req, res) => {
    const caller = callerOf(req);
    res.status(req.path.endsWith('/conflict') ? 409 : 200).json({
      method: req.method,
      url: req.originalUrl,
      body: Buffer.isBuffer(req.body) && req.body.length ? req.body.toString() : null,
      tenant: caller.tenantId,
      actor: caller.actor,
      requestId: req.header('x-request-id'),
      leakedAuthorization: req.header('authorization') ?? null,
    });
  });
  return listen(app, 0);
}

describe('gateway', () => {
  let upstream: RunningServer;
  let gateway: GatewayApp;
  let base: string;
  let upstreams: Upstreams;
  const publisher = new CapturingPublisher();

  beforeAll(async () => {
    upstream = await echoService();
    upstreams = upstreamsAt(upstream.url);
    gateway = testGateway({
      publisher,
      upstreams,
      keys: stubKeys,
      operatorToken: OPERATOR_TOKEN,
      openApiDocument: () => ({ openapi: '3.1.0' }),
    });
    base = (await gateway.start(0)).url;
  });
  afterAll(async () => {
    await gateway.stop();
    await closeUpstreams(upstreams);
    await upstream.close();
  });

  const call = async (method: string, path: string, headers: Record<string, string> = {}, body?: string) => {
    const res = await fetch(base + path, { method, headers, body });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
  const asA = { authorization: `Bearer ${TENANT_A}:secret-all` };

  it('when a path is unknown, then 404 in the envelope with a request id', async () => {
    const r = await call('GET', '/v1/nope', asA);
    expect(r).toMatchObject({ status: 404, body: { error: 'NOT_FOUND', message: 'Route not found' } });
    expect(Object.keys(r.body)).toEqual(['error', 'message']);
    expect(r.headers.get('x-request-id')).toBeTruthy();
  });

  it('when a URL is one only express reads (a fragment, the absolute form), then its path is the one express gives', async () => {
    const raw = (target: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(Number(new URL(base).port), '127.0.0.1', () =>
          socket.write(`GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`),
        );
        let text = '';
        socket.on('data', (d) => (text += d.toString()));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
    expect(await raw('/healthz#fragment')).toMatch(/^HTTP\/1\.1 200 [\s\S]*\{"status":"ok"\}$/);
    expect(await raw('http://x/healthz?a=1')).toMatch(/^HTTP\/1\.1 200 /);
    expect(await raw('/v1/nope#/healthz')).toMatch(/^HTTP\/1\.1 404 [\s\S]*"Route not found"/);
  });

  it('when a known path is called with the wrong method, then 405 with Allow', async () => {
    const r = await call('DELETE', '/v1/mandates', asA);
    expect(r.status).toBe(405);
    expect(r.body.error).toBe('METHOD_NOT_ALLOWED');
    expect(r.headers.get('allow')).toBe('POST, GET');
  });

  it('when authenticated with a Bearer key, then the call is forwarded with the tenant and key id, never the credential', async () => {
    const r = await call('GET', '/v1/mandates?limit=5', { ...asA, 'x-request-id': 'client-req-1' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      method: 'GET',
      url: '/v1/mandates?limit=5',
      tenant: TENANT_A,
      actor: { type: 'api_key', key_id: 'key_all' },
      requestId: 'client-req-1',
      leakedAuthorization: null,
    });
    expect(r.headers.get('x-request-id')).toBe('client-req-1');
  });

  it('when the unversioned alias is used, then it reaches the /v1 route', async () => {
    const r = await call('POST', '/verify', { ...asA, 'content-type': 'application/json' }, '{"a":1}');
    expect(r.body).toMatchObject({ url: '/v1/verify', body: '{"a":1}' });
  });

  it.each([[{ 'x-api-key': `${TENANT_A}:secret-all` }], [{ 'x-api-key': 'secret-all' }]])(
    'when the key comes in X-Api-Key (%j), then it authenticates',
    async (headers) => {
      expect((await call('GET', '/v1/mandates', headers)).status).toBe(200);
    },
  );

  it.each([
    ['no credential', {}, 'Invalid or missing API key'],
    [
      'a Bearer without tenant',
      { authorization: 'Bearer just-a-secret' },
      'Malformed Bearer value (expected Bearer tenantId:apiKey)',
    ],
    [
      'a Basic header',
      { authorization: 'Basic abc' },
      'Malformed Bearer value (expected Bearer tenantId:apiKey)',
    ],
    ['an unknown key', { authorization: `Bearer ${TENANT_A}:nope` }, 'Invalid or missing API key'],
    [
      'another tenant in the credential',
      { authorization: `Bearer ${TENANT_B}:secret-all` },
      'Invalid or missing API key',
    ],
    [
      'the operator token',
      { authorization: `Bearer ${OPERATOR_TOKEN}` },
      'The operator token is accepted only on /v1/platform/* routes',
    ],
    [
      'an API key without its tenant id in Bearer',
      { authorization: `Bearer msk_${'a'.repeat(43)}` },
      'Bearer value looks like an API key without its tenant id: send Authorization: Bearer <tenantId>:<apiKey> or X-Api-Key: <apiKey>',
    ],
  ])('when the caller sends %s, then 401 with the exact message', async (_label, headers, message) => {
    const r = await call('GET', '/v1/mandates', headers as Record<string, string>);
    expect(r).toMatchObject({ status: 401, body: { error: 'UNAUTHORIZED', message } });
    expect(Object.keys(r.body)).toEqual(['error', 'message']);
  });

  it('when the key lacks the scope, then 403 naming it', async () => {
    const r = await call('POST', '/v1/mandates', { authorization: `Bearer ${TENANT_A}:secret-verify` });
    expect(r).toMatchObject({
      status: 403,
      body: { error: 'FORBIDDEN', message: 'API key lacks required scope: mandates:write' },
    });
  });

  it('when the path names another tenant, then 404 as if it did not exist', async () => {
    const r = await call('GET', `/v1/tenants/${TENANT_B}`, asA);
    expect(r.status).toBe(404);
  });

  it('when the body is over 64 KiB, then 413 in the envelope', async () => {
    const r = await call(
      'POST',
      '/v1/mandates',
      { ...asA, 'content-type': 'application/json' },
      JSON.stringify({ x: 'a'.repeat(70_000) }),
    );
    expect(r).toMatchObject({ status: 413, body: { error: 'PAYLOAD_TOO_LARGE' } });
  });

  it('when a gzip body does not inflate, then 400 in the envelope, not a 500', async () => {
    const r = await call(
      'POST',
      '/v1/mandates',
      { ...asA, 'content-type': 'application/json', 'content-encoding': 'gzip' },
      '{"not":"gzip"}',
    );
    expect(r).toEqual({
      status: 400,
      headers: r.headers,
      body: { error: 'BAD_REQUEST', message: 'Request body could not be decompressed' },
    });
  });

  it('when the operator token calls the platform surface, then it is forwarded as operator; an API key is refused', async () => {
    const ok = await call('POST', '/v1/platform/tenants', { authorization: `Bearer ${OPERATOR_TOKEN}` });
    expect(ok.body).toMatchObject({ actor: { type: 'operator' }, tenant: null });
    expect((await call('POST', '/v1/platform/tenants', asA)).status).toBe(401);
    expect((await call('POST', '/v1/platform/tenants', {})).status).toBe(401);
  });

  it('when a public route is called without credentials, then it is served', async () => {
    expect((await call('GET', '/v1/.well-known/jwks.json')).status).toBe(200);
    expect((await call('GET', '/v1/openapi.json')).body).toEqual({ openapi: '3.1.0' });
  });

  it('when an authenticated call finishes, then one API_CALL event records method, route, status and key id', async () => {
    const r = await call('POST', '/v1/mandates/mdt_x/conflict'.replace('/conflict', '/revoke'), {
      ...asA,
      'x-request-id': 'audit-me',
    });
    expect(r.status).toBe(200);
    // The event is published once the answer is finished, which can be after the client has it.
    const events = await eventually(() => {
      const recorded = publisher.events.filter((e) => e.request_id === 'audit-me');
      return recorded.length > 0 ? recorded : undefined;
    });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: 'API_CALL',
      tenant_id: TENANT_A,
      actor: { type: 'api_key', key_id: 'key_all' },
      data: { method: 'POST', route: '/v1/mandates/:id/revoke', status: 200, key_id: 'key_all' },
    });
  });

  it('when an upstream is down, then 503 in the envelope', async () => {
    const dead = new ServiceClient(['http://127.0.0.1:1']);
    const g = testGateway({
      publisher,
      upstreams: { mandates: dead, verify: dead, identity: dead, audit: dead },
      keys: stubKeys,
      operatorToken: OPERATOR_TOKEN,
    });
    const s = await g.start(0);
    const res = await fetch(`${s.url}/v1/mandates`, { headers: asA });
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({
      error: 'SERVICE_UNAVAILABLE',
      message: 'Mandates service unavailable',
    });
    await g.stop();
    await dead.close();
  });
});
