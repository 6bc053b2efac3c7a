import { CLIENT_HEADER } from '@mandate/shared/events';
import { API_KEY_SCOPES } from '@mandate/shared/contract';
import { listen, type RunningServer } from '@mandate/shared/http';
import { CapturingPublisher } from '@mandate/shared/testing';
import { closeUpstreams, keysOf, standInService, testGateway, upstreamsAt } from './helpers';
import type { GatewayApp, Upstreams } from '../src/app';
import type { Principal } from '../src/auth/authenticate';

/**
 * docs/API.md#audit-of-every-call: an API_CALL says how the call came (`data.via`): `dashboard`
 * when the dashboard sent it (X-Mandate-Client: dashboard) with a sign-in token, `api` for
 * everything else — an API key's call above all, whatever headers it carries, so a program's reads
 * never hide among the dashboard's (exclude_dashboard_reads).
 */
const TENANT = 'tnt_01jaaaaaaaaaaaaaaaaaaaaaaa';
const OPERATOR_TOKEN = 'operator-secret-for-tests';
// Any three-part token is a JWT to the gateway; the stub below makes it the signed-in person.
const PERSON = 'Bearer aaa.bbb.ccc';

describe('API_CALL via: the dashboard or the API (docs/API.md#audit-of-every-call)', () => {
  const publisher = new CapturingPublisher();
  let upstream: RunningServer;
  let upstreams: Upstreams;
  let gateway: GatewayApp;
  let base: string;
  let counter = 0;
  const jwt = {
    authenticate: async (_token: string, tenantId: string | null): Promise<Principal> => ({
      tenantId,
      actor: { type: 'user', subject_id: 'dashboard:alice' },
      permissions: ['mandates:read', 'mandates:write', 'events:read'],
    }),
  };

  beforeAll(async () => {
    const app = standInService();
    app.all('/{*rest}', (_req, res) => {
      res.status(200).json({ data: [], has_more: false, next_cursor: null });
    });
    upstream = await listen(app, 0);
    upstreams = upstreamsAt(upstream.url);
    gateway = testGateway({
      publisher,
      upstreams,
      keys: keysOf({
        'secret-all': {
          key_id: 'key_all',
          tenant_id: TENANT,
          scopes: [...API_KEY_SCOPES],
          status: 'active',
          plan: 'beta',
        },
      }),
      operatorToken: OPERATOR_TOKEN,
      jwt,
    });
    base = (await gateway.start(0)).url;
  });
  afterAll(async () => {
    await gateway.stop();
    await closeUpstreams(upstreams);
    await upstream.close();
  });

  /** One call; the `via` of its API_CALL (handed to the publisher before the answer ends). */
  async function viaOf(method: string, path: string, headers: Record<string, string>): Promise<unknown> {
    const requestId = `via-case-${++counter}`;
    const res = await fetch(base + path, {
      method,
      headers: {
        'x-request-id': requestId,
        ...(method === 'POST' ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      body: method === 'POST' ? '{}' : undefined,
    });
    await res.arrayBuffer();
    expect(res.status).toBe(200);
    const events = publisher.events.filter((e) => e.type === 'API_CALL' && e.request_id === requestId);
    expect(events).toHaveLength(1);
    return events[0]!.data.via;
  }

  const dashboard = { [CLIENT_HEADER]: 'dashboard' };
  const person = { authorization: PERSON, 'x-tenant-id': TENANT };

  it('when a signed-in person calls through the dashboard, then via is dashboard, reads and writes alike', async () => {
    expect(await viaOf('GET', '/v1/events', { ...person, ...dashboard })).toBe('dashboard');
    expect(await viaOf('POST', '/v1/mandates', { ...person, ...dashboard })).toBe('dashboard');
    // Header names are case-insensitive, and so is the value.
    expect(await viaOf('GET', '/v1/mandates', { ...person, 'x-mandate-client': ' Dashboard ' })).toBe(
      'dashboard',
    );
  });

  it('when the operator calls through the dashboard, then via is dashboard too', async () => {
    expect(
      await viaOf('GET', '/v1/platform/tenants', { authorization: `Bearer ${OPERATOR_TOKEN}`, ...dashboard }),
    ).toBe('dashboard');
  });

  it('when a signed-in person calls without the header, or with another value, then via is api', async () => {
    expect(await viaOf('GET', '/v1/events', person)).toBe('api');
    expect(await viaOf('GET', '/v1/events', { ...person, [CLIENT_HEADER]: 'my-script' })).toBe('api');
  });

  it('when an API key calls with the dashboard header, then via is api: a program cannot pass for the dashboard', async () => {
    const key = { authorization: `Bearer ${TENANT}:secret-all` };
    expect(await viaOf('GET', '/v1/events', key)).toBe('api');
    expect(await viaOf('GET', '/v1/events', { ...key, ...dashboard })).toBe('api');
    expect(await viaOf('GET', '/v1/events', { 'x-api-key': 'secret-all', ...dashboard })).toBe('api');
  });
});
