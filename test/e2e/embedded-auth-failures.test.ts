import { startEmbedded, type EmbeddedStack } from '../../scripts/embedded';
import { apiClient, createTenant, eventually } from '../support/stack';

/**
 * The failed-authentication limit behind a shared address (a company NAT), through the gateway of
 * `npm start` (real identity, the revocation event on its bus): a client with a stale key gets the
 * address blocked, every valid key keeps working there in every header form (one created since
 * included, also once the address has spent its lookups on guesses, and a JWT never seen before),
 * and a revocation (its event evicting the gateway's cache and its list of usable keys) still wins.
 * (docs/DECISIONS.md, "Authentication")
 * TRUST_PROXY names the client by X-Forwarded-For, so the NAT is one address of the test's choosing.
 */
describe('end to end: a blocked shared address and the valid keys behind it', () => {
  let stack: EmbeddedStack;
  let api: ReturnType<typeof apiClient>;
  const NAT = { 'x-forwarded-for': '198.51.100.77' };

  beforeAll(async () => {
    stack = await startEmbedded(
      {
        PORT: '0',
        PATH: process.env.PATH,
        AUTH_FAILURE_LIMIT_PER_MINUTE: '2',
        TRUST_PROXY: 'true',
        // A minute of key cache: only the revocation event can explain a refusal within the test.
        KEY_CACHE_TTL_MS: '60000',
      },
      true,
    );
    api = apiClient(stack.url);
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
  }, 30_000);

  it('when a stale key blocks the address, then every valid key still works there, in any header form, the stale one stays 429, and once revoked the recent key is refused', async () => {
    const operator = { gateway: { url: stack.url }, operatorToken: stack.operatorToken };
    const { tenant, auth: admin } = await createTenant(operator, { name: 'Behind a NAT' });
    const newKey = async (name: string) => {
      const created = await api('POST', `/v1/tenants/${tenant.id}/api-keys`, {
        auth: admin,
        body: { name, scopes: ['mandates:read'] },
      });
      expect(created.status).toBe(201);
      return { id: created.body.key_id as string, auth: `${tenant.id}:${created.body.api_key}` };
    };
    const [good, unseen] = [await newKey('good client'), await newKey('not seen yet')];
    const fromNat = (auth: string) => api('GET', '/v1/mandates', { auth, headers: NAT });

    expect((await fromNat(good.auth)).status).toBe(200);
    const stale = `${tenant.id}:msk_${'0'.repeat(43)}`;
    expect((await fromNat(stale)).status).toBe(401);
    expect((await fromNat(stale)).status).toBe(401);
    const blocked = await fromNat(stale);
    expect(blocked.body).toEqual({
      error: 'TOO_MANY_REQUESTS',
      message: 'Too many failed authentications from this address; retry later',
    });

    expect((await fromNat(good.auth)).status).toBe(200);
    expect((await fromNat(unseen.auth)).status).toBe(200);
    const secret = good.auth.slice(good.auth.indexOf(':') + 1);
    const forms: Record<string, string>[] = [
      { authorization: `bearer ${good.auth}` },
      { 'x-api-key': good.auth },
      { 'x-api-key': secret },
    ];
    for (const form of forms) {
      const r = await api('GET', '/v1/mandates', { headers: { ...NAT, ...form } });
      expect({ form, status: r.status }).toEqual({ form, status: 200 });
    }
    const created = await newKey('created while blocked');
    expect((await fromNat(created.auth)).status).toBe(200);
    expect((await fromNat(stale)).status).toBe(429);
    // Ten distinct failing guesses spend the address's lookups of this minute; a key created after
    // that, never seen by the gateway, still passes by identity's list of usable keys.
    for (let i = 0; i < 10; i++) {
      const guess = `${tenant.id}:msk_${String.fromCharCode(65 + i).repeat(43)}`;
      expect((await fromNat(guess)).status).toBe(429);
    }
    const afterGuesses = await newKey('created after the guesses');
    expect((await fromNat(afterGuesses.auth)).status).toBe(200);
    expect((await fromNat(`${tenant.id}:msk_${'K'.repeat(43)}`)).status).toBe(429);
    // So does a JWT this gateway has never seen, signed by a trusted issuer (here the development
    // sign-in), while a forged one stays 429.
    const assigned = await api('POST', `/v1/tenants/${tenant.id}/role-assignments`, {
      auth: admin,
      body: { subject_id: 'dashboard:nat-user', roles: ['tenant_viewer'] },
    });
    expect(assigned.status).toBe(201);
    const signedIn = await api('POST', '/dashboard-dev/sign-in', {
      body: { tenant_id: tenant.id, subject_id: 'dashboard:nat-user' },
    });
    expect(signedIn.status).toBe(200);
    const token: string = signedIn.body.token;
    const asSubject = (jwt: string) =>
      api('GET', '/v1/me', { auth: jwt, headers: { ...NAT, 'x-tenant-id': tenant.id } });
    expect((await asSubject(token)).status).toBe(200);
    const [header, payload] = token.split('.');
    expect((await asSubject(`${header}.${payload}.${'A'.repeat(86)}`)).status).toBe(429);

    const revoked = await api('POST', `/v1/tenants/${tenant.id}/api-keys/${good.id}/revoke`, { auth: admin });
    expect(revoked.status).toBe(200);
    await eventually(async () => ((await fromNat(good.auth)).status === 200 ? undefined : true), 5_000);
    expect((await fromNat(good.auth)).status).toBe(429);
  });
});
