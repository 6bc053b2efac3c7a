import { startEmbedded, type EmbeddedStack } from '../../scripts/embedded';
import { apiClient, createTenant, eventually, README_MANDATE } from '../support/stack';

/** `npm start`'s launcher: every service in one process, embedded adapters, no infrastructure. */
describe('embedded mode (npm start)', () => {
  let stack: EmbeddedStack;
  beforeAll(async () => {
    // Only Node: no broker, no Redis, no MongoDB in this environment.
    stack = await startEmbedded({ PORT: '0', PATH: process.env.PATH }, true);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('when the README walk-through runs against it, then every step answers as documented', async () => {
    const api = apiClient(stack.url);
    const { auth } = await createTenant(
      { gateway: { url: stack.url }, operatorToken: stack.operatorToken },
      { name: 'Acme', plan: 'beta' },
    );
    const mandate = await api('POST', '/v1/mandates', {
      auth,
      body: README_MANDATE,
    });
    expect(mandate.status).toBe(201);
    const id = mandate.body.id;
    const allow = await api('POST', '/v1/verify', {
      auth,
      body: { mandate_id: id, action: 'payments:create', amount: 1200, currency: 'EUR' },
    });
    expect(allow.body).toMatchObject({ decision: 'ALLOW', reason: 'OK' });
    expect(
      (await api('POST', `/v1/mandates/${id}/suspend`, { auth, body: { reason: 'card lost' } })).body.state,
    ).toBe('SUSPENDED');
    const deny = await api('POST', '/v1/verify', {
      auth,
      body: { mandate_id: id, action: 'payments:create' },
    });
    expect(deny.body).toMatchObject({ decision: 'DENY', reason: 'MANDATE_SUSPENDED' });
    expect((await api('POST', `/v1/mandates/${id}/revoke`, { auth })).status).toBe(200);
    const again = await api('POST', `/v1/mandates/${id}/revoke`, { auth });
    expect(again.body).toEqual({ error: 'CONFLICT', message: 'Mandate is already revoked' });
    await eventually(async () => {
      const res = await api('GET', `/v1/events?resource_id=${id}&type=MANDATE_SUSPENDED,MANDATE_REVOKED`, {
        auth,
      });
      return res.body.data.length === 2 ? true : undefined;
    });
    expect((await api('GET', '/v1/.well-known/jwks.json')).body.keys).toHaveLength(1);
    const openapi = await api('GET', '/v1/openapi.json');
    expect(Object.keys(openapi.body.paths)).toEqual(
      expect.arrayContaining(['/v1/mandates', '/v1/verify', '/v1/events']),
    );
  });

  it('when a key is revoked, then the gateway refuses it at once, not after its cache TTL', async () => {
    // A one-minute key cache: only the in-process key event can make the revocation visible in time.
    const slowCache = await startEmbedded(
      { PORT: '0', PATH: process.env.PATH, KEY_CACHE_TTL_MS: '60000' },
      true,
    );
    try {
      const api = apiClient(slowCache.url);
      const tenant = await api('POST', '/v1/platform/tenants', {
        auth: slowCache.operatorToken,
        body: { name: 'Acme', plan: 'beta' },
      });
      const admin = `${tenant.body.tenant.id}:${tenant.body.api_key.api_key}`;
      const keys = `/v1/tenants/${tenant.body.tenant.id}/api-keys`;
      const created = await api('POST', keys, {
        auth: admin,
        body: { name: 'ci', scopes: ['mandates:read'] },
      });
      expect(created.status).toBe(201);
      const ci = `${tenant.body.tenant.id}:${created.body.api_key}`;
      // Resolved and cached by the gateway.
      expect((await api('GET', '/v1/mandates', { auth: ci })).status).toBe(200);

      expect((await api('POST', `${keys}/${created.body.key_id}/revoke`, { auth: admin })).status).toBe(200);
      const revokedAt = Date.now();
      let refusedAfterMs: number | undefined;
      while (Date.now() - revokedAt < 5_000) {
        const res = await api('GET', '/v1/mandates', { auth: ci });
        if (res.status === 401) {
          refusedAfterMs = Date.now() - revokedAt;
          break;
        }
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(refusedAfterMs).toBeDefined();
      expect(refusedAfterMs!).toBeLessThan(1_000);
    } finally {
      await slowCache.stop();
    }
  });
});
