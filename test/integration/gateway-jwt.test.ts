import { SignJWT } from 'jose';
import { newId } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { ServiceClient } from '@mandate/shared/http';
import { anyEvent, callService, testTokens } from '@mandate/shared/testing';
import {
  createApp,
  type GatewayApp,
  credentialEventHandler,
  JoseJwtAuthenticator,
  parseJwtIssuers,
  type JwtIssuer,
  CachedKeyResolver,
  type KeyResolver,
  CachedSubjectResolver,
} from '@mandate/gateway/testing';
import { eventually } from '../support/eventually';
import { startJwksServer, unsecuredToken, type JwksServer } from '../support/jwks-server';
import { assignRoles } from '@mandate/identity/testing';
import { NullPublisher, startInProcessUpstreams, type InProcessUpstreams } from './in-process-upstreams';

const silent = createLogger('gateway-jwt-test', 'silent');
const AUDIENCE = 'mandate-api';

const noKeys: KeyResolver = { resolve: async () => null, evict: () => undefined };

describe('gateway: JWT callers (real JWKS on loopback, real identity in-process)', () => {
  let dashboard: JwksServer;
  let workforce: JwksServer;
  let inProcess: InProcessUpstreams;
  let gateway: GatewayApp;
  let base: string;
  let issuers: JwtIssuer[];

  /** A tenant (created as the operator would) with role assignments for the given subjects. */
  async function tenantWith(assignments: Record<string, string[]>) {
    const created = await callService(inProcess.identityServer.url, 'POST', '/v1/platform/tenants', {
      caller: { tenantId: null, actor: { type: 'operator' }, permissions: [], requestId: 'req_test' },
      body: { name: 'Acme', plan: 'enterprise' },
    });
    const tenantId: string = created.body.tenant.id;
    for (const [subject_id, roles] of Object.entries(assignments)) {
      const assignment = await assignRoles(inProcess.identity.deps, tenantId, {
        subjectId: subject_id,
        roles,
      });
      expect(assignment.subject_id).toBe(subject_id);
    }
    return tenantId;
  }

  beforeAll(async () => {
    [dashboard, workforce] = await Promise.all([startJwksServer(), startJwksServer()]);
    inProcess = await startInProcessUpstreams(silent);
    issuers = parseJwtIssuers(
      JSON.stringify([
        {
          name: 'dashboard',
          issuer: dashboard.issuer,
          jwks_uri: dashboard.jwksUri,
          audience: AUDIENCE,
          subject_scheme: 'dashboard',
        },
        {
          name: 'workforce',
          issuer: workforce.issuer,
          jwks_uri: workforce.jwksUri,
          audience: [AUDIENCE, 'other'],
          subject_scheme: 'oidc',
        },
      ]),
    );
    // TTL 0: every request asks identity, so role changes in one test never leak into the next.
    const subjects = new CachedSubjectResolver(inProcess.upstreams.identity, testTokens, 0);
    gateway = createApp({
      tokens: testTokens,
      logger: silent,
      publisher: new NullPublisher(),
      upstreams: inProcess.upstreams,
      keys: noKeys,
      operatorToken: 'operator-token-for-jwt-tests',
      // cooldown 0: an unknown kid refetches at once (production keeps jose's 30 s default).
      jwt: new JoseJwtAuthenticator(issuers, subjects, { cooldownMs: 0 }),
      openApiDocument: () => ({}),
    });
    base = (await gateway.start(0)).url;
  });

  afterAll(async () => {
    await gateway.stop();
    await inProcess.close();
    await Promise.all([dashboard.close(), workforce.close()]);
  });

  const call = async (method: string, path: string, token: string, headers: Record<string, string> = {}) => {
    const res = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...headers },
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  const claims = (sub: string) => ({ sub, aud: AUDIENCE });

  it('when a dashboard token calls with X-Tenant-Id, then the call is forwarded as user dashboard:<sub> with the assignment permissions', async () => {
    const tenantId = await tenantWith({ 'dashboard:alice': ['tenant_operator'] });
    const token = await dashboard.sign(claims('alice'));
    const res = await call('GET', '/v1/mandates', token, { 'x-tenant-id': tenantId });
    expect(res).toEqual({
      status: 200,
      body: {
        tenant: tenantId,
        actor: { type: 'user', subject_id: 'dashboard:alice' },
        permissions: ['events:read', 'mandates:read', 'mandates:write', 'verify'],
      },
    });
  });

  it('when an oidc provider token names the tenant in the path, then the subject is oidc:<provider>:<sub> and identity answers', async () => {
    const tenantId = await tenantWith({ 'oidc:workforce:bob@corp': ['tenant_viewer'] });
    const token = await workforce.sign(claims('bob@corp'));
    const res = await call('GET', `/v1/tenants/${tenantId}`, token);
    expect(res).toMatchObject({ status: 200, body: { id: tenantId, plan: 'enterprise' } });
  });

  it('when the path tenant and X-Tenant-Id differ, then the path wins', async () => {
    const tenantId = await tenantWith({ 'dashboard:carol': ['tenant_admin'] });
    const other = await tenantWith({});
    const token = await dashboard.sign(claims('carol'));
    expect((await call('GET', `/v1/tenants/${tenantId}`, token, { 'x-tenant-id': other })).status).toBe(200);
  });

  it('when the subject has no assignment in the tenant (or the tenant does not exist), then 404, not 403', async () => {
    await tenantWith({ 'dashboard:dave': ['tenant_admin'] });
    const stranger = await tenantWith({});
    const token = await dashboard.sign(claims('dave'));
    for (const tenantId of [stranger, newId('tnt')]) {
      expect(await call('GET', `/v1/tenants/${tenantId}`, token)).toEqual({
        status: 404,
        body: { error: 'NOT_FOUND', message: 'Tenant not found' },
      });
      expect((await call('GET', '/v1/mandates', token, { 'x-tenant-id': tenantId })).status).toBe(404);
    }
  });

  it('when the role lacks the permission, then 403 naming the permission', async () => {
    const tenantId = await tenantWith({ 'dashboard:erin': ['tenant_viewer'] });
    const token = await dashboard.sign(claims('erin'));
    expect(await call('POST', '/v1/mandates', token, { 'x-tenant-id': tenantId })).toEqual({
      status: 403,
      body: { error: 'FORBIDDEN', message: 'Missing required permission: mandates:write' },
    });
    expect(await call('POST', `/v1/tenants/${tenantId}/role-assignments`, token)).toEqual({
      status: 403,
      body: { error: 'FORBIDDEN', message: 'Missing required permission: tenant:write' },
    });
  });

  it('when a JWT caller names no tenant, then 400 asking for X-Tenant-Id', async () => {
    await tenantWith({ 'dashboard:frank': ['tenant_admin'] });
    const token = await dashboard.sign(claims('frank'));
    expect(await call('GET', '/v1/mandates', token)).toEqual({
      status: 400,
      body: { error: 'BAD_REQUEST', message: 'X-Tenant-Id is required for a JWT caller on this route' },
    });
  });

  it('when the token expired 30 s ago, then it is still accepted (60 s clock skew)', async () => {
    const tenantId = await tenantWith({ 'dashboard:gina': ['tenant_viewer'] });
    const token = await dashboard.sign({ ...claims('gina'), exp: Math.floor(Date.now() / 1000) - 30 });
    expect((await call('GET', '/v1/mandates', token, { 'x-tenant-id': tenantId })).status).toBe(200);
  });

  describe('refused tokens', () => {
    let tenantId: string;
    beforeAll(async () => {
      tenantId = await tenantWith({ 'dashboard:mallory': ['tenant_admin'] });
    });
    const now = () => Math.floor(Date.now() / 1000);

    it.each<[string, () => Promise<string>, string]>([
      [
        'expired (beyond the skew)',
        () => dashboard.sign({ ...claims('mallory'), exp: now() - 120 }),
        'Bearer token expired',
      ],
      [
        'not yet valid (beyond the skew)',
        () => dashboard.sign({ ...claims('mallory'), nbf: now() + 120 }),
        'Invalid bearer token',
      ],
      [
        'for another audience',
        () => dashboard.sign({ sub: 'mallory', aud: 'someone-else' }),
        'Invalid bearer token',
      ],
      ['without an audience', () => dashboard.sign({ sub: 'mallory' }), 'Invalid bearer token'],
      [
        'from an unconfigured issuer',
        () => dashboard.sign({ ...claims('mallory'), iss: 'https://evil.example.com' }),
        'Invalid bearer token',
      ],
      // Signed with the dashboard's key but claiming the workforce issuer: the workforce JWKS has no such kid.
      [
        'claiming another configured issuer',
        () => dashboard.sign({ ...claims('mallory'), iss: workforce.issuer }),
        'Invalid bearer token',
      ],
      [
        'signed with an unknown kid',
        async () => dashboard.sign(claims('mallory'), { kid: await dashboard.addKey({ publish: false }) }),
        'Invalid bearer token',
      ],
      [
        'with alg none',
        async () => unsecuredToken({ ...claims('mallory'), iss: dashboard.issuer, exp: now() + 300 }),
        'Invalid bearer token',
      ],
      [
        'HMAC-signed (alg HS256)',
        () =>
          new SignJWT(claims('mallory'))
            .setProtectedHeader({ alg: 'HS256', kid: 'x' })
            .setIssuer(dashboard.issuer)
            .setExpirationTime('5m')
            .sign(new TextEncoder().encode('a-shared-secret-of-at-least-32-bytes!')),
        'Invalid bearer token',
      ],
      ['without sub', () => dashboard.sign({ aud: AUDIENCE }), 'Invalid bearer token'],
      [
        'with a tampered payload',
        async () => {
          const [h, , s] = (await dashboard.sign(claims('mallory'))).split('.');
          return `${h}.${Buffer.from(JSON.stringify({ ...claims('admin'), iss: dashboard.issuer, exp: now() + 300 })).toString('base64url')}.${s}`;
        },
        'Invalid bearer token',
      ],
    ])('when the token is %s, then 401', async (_label, make, message) => {
      const res = await call('GET', '/v1/mandates', await make(), { 'x-tenant-id': tenantId });
      expect(res).toEqual({ status: 401, body: { error: 'UNAUTHORIZED', message } });
    });
  });

  it('when a token carries a kid published after the JWKS was cached, then the set is fetched again and the token accepted', async () => {
    const tenantId = await tenantWith({ 'dashboard:rotator': ['tenant_viewer'] });
    expect(
      (
        await call('GET', '/v1/mandates', await dashboard.sign(claims('rotator')), {
          'x-tenant-id': tenantId,
        })
      ).status,
    ).toBe(200);
    const before = dashboard.fetches();
    // A second request with a known kid: served from the cache.
    expect(
      (
        await call('GET', '/v1/mandates', await dashboard.sign(claims('rotator')), {
          'x-tenant-id': tenantId,
        })
      ).status,
    ).toBe(200);
    expect(dashboard.fetches()).toBe(before);
    const kid = await dashboard.addKey({ publish: false });
    dashboard.publish(kid);
    const res = await call('GET', '/v1/mandates', await dashboard.sign(claims('rotator'), { kid }), {
      'x-tenant-id': tenantId,
    });
    expect(res.status).toBe(200);
    expect(dashboard.fetches()).toBe(before + 1);
  });

  it("when the issuer's JWKS endpoint is unreachable, then 503", async () => {
    const down = await startJwksServer();
    const token = await down.sign(claims('x'));
    await down.close();
    const jwt = new JoseJwtAuthenticator(
      [
        {
          name: 'down',
          issuer: down.issuer,
          jwks_uri: down.jwksUri,
          audience: AUDIENCE,
          subject_scheme: 'dashboard',
        },
      ],
      { resolve: async () => null, evict: () => undefined },
    );
    await expect(jwt.authenticate(token, newId('tnt'))).rejects.toMatchObject({
      status: 503,
      message: 'Identity provider unavailable',
    });
  });
});

describe('gateway: JWT_ISSUERS', () => {
  const valid = {
    name: 'dash',
    issuer: 'https://id.example.com',
    jwks_uri: 'https://id.example.com/jwks.json',
    audience: 'api',
    subject_scheme: 'dashboard',
  };

  it('when it is unset or empty, then no issuer is configured', () => {
    expect(parseJwtIssuers(undefined)).toEqual([]);
    expect(parseJwtIssuers('')).toEqual([]);
  });

  it('when it lists valid issuers, then they are parsed', () => {
    expect(parseJwtIssuers(JSON.stringify([valid]))).toEqual([valid]);
  });

  it.each([
    'http://127.0.0.1:9000/jwks',
    'http://127.1.2.3/jwks',
    'http://[::1]:9000/jwks',
    'http://localhost/jwks',
  ])('when an http JWKS is on the loopback host of %s, then it is accepted', (jwks_uri) => {
    expect(parseJwtIssuers(JSON.stringify([{ ...valid, jwks_uri }]))).toEqual([{ ...valid, jwks_uri }]);
  });

  it.each([
    ['not JSON', '{', /^JWT_ISSUERS: must be a JSON list/],
    [
      'a bad scheme',
      JSON.stringify([{ ...valid, subject_scheme: 'email' }]),
      /^JWT_ISSUERS\[0\]\["subject_scheme"\]/,
    ],
    [
      'a missing jwks_uri',
      JSON.stringify([{ ...valid, jwks_uri: undefined }]),
      /^JWT_ISSUERS\[0\]\["jwks_uri"\]/,
    ],
    ['an unknown field', JSON.stringify([{ ...valid, secret: 'x' }]), /^JWT_ISSUERS\[0\]/],
    [
      'a repeated issuer',
      JSON.stringify([valid, { ...valid, name: 'other', subject_scheme: 'oidc' }]),
      /^JWT_ISSUERS\[1\]\["issuer"\]: issuers must be unique/,
    ],
    [
      'a repeated name',
      JSON.stringify([
        { ...valid, subject_scheme: 'oidc' },
        { ...valid, issuer: 'https://other.example.com', subject_scheme: 'oidc' },
      ]),
      /^JWT_ISSUERS\[1\]\["name"\]: names must be unique/,
    ],
    [
      'two issuers of one subject scheme',
      JSON.stringify([valid, { ...valid, name: 'dash2', issuer: 'https://other.example.com' }]),
      /^JWT_ISSUERS\[1\]\["subject_scheme"\]: only one issuer may use subject scheme dashboard/,
    ],
    [
      'an http JWKS on a non-loopback host',
      JSON.stringify([{ ...valid, jwks_uri: 'http://id.example.com/jwks.json' }]),
      /^JWT_ISSUERS\[0\]\["jwks_uri"\]: must be https/,
    ],
    [
      'an http JWKS on a host that only starts like a loopback address',
      JSON.stringify([{ ...valid, jwks_uri: 'http://127.0.0.1.example.com/jwks.json' }]),
      /^JWT_ISSUERS\[0\]\["jwks_uri"\]: must be https/,
    ],
  ])('when it has %s, then start-up fails naming JWT_ISSUERS', (_label, raw, message) => {
    expect(() => parseJwtIssuers(raw)).toThrow(message);
  });
});

describe('gateway: credential caches and eviction', () => {
  /** An identity stand-in whose answers the test releases by hand. */
  function slowIdentity() {
    const pending: (() => void)[] = [];
    let calls = 0;
    const client = {
      request: async () => {
        calls++;
        await new Promise<void>((r) => pending.push(r));
        const key = {
          key_id: 'key_a',
          tenant_id: 'tnt_a',
          scopes: ['verify'],
          status: 'active',
          plan: 'beta',
        };
        return { status: 200, headers: {}, body: Buffer.from(JSON.stringify(key)) };
      },
    } as unknown as ServiceClient;
    /** Waits (no fixed sleep: a loaded machine may be slow) until the resolver has asked n times. */
    const reached = (n: number) =>
      eventually(() => (calls >= n ? true : undefined), 10_000, `the resolver to ask ${n} times`, 1);
    return { client, release: () => pending.splice(0).forEach((r) => r()), calls: () => calls, reached };
  }

  it('when a key is evicted while its resolution is in flight, then that answer is not cached', async () => {
    const identity = slowIdentity();
    const keys = new CachedKeyResolver(identity.client, testTokens, 60_000);
    const first = keys.resolve('msk_secret');
    await identity.reached(1);
    keys.evict('key_a');
    identity.release();
    await first;
    const second = keys.resolve('msk_secret');
    await identity.reached(2);
    identity.release();
    await second;
    expect(identity.calls()).toBe(2);
    // Now cached: a third resolve costs no call.
    await keys.resolve('msk_secret');
    expect(identity.calls()).toBe(2);
  });

  it('when key and role events arrive, then the matching cached resolutions are evicted', async () => {
    const evictedKeys: string[] = [];
    const evictedSubjects: string[] = [];
    const handler = credentialEventHandler(
      { resolve: async () => null, evict: (id) => void evictedKeys.push(id) },
      { resolve: async () => null, evict: (t, s) => void evictedSubjects.push(`${t} ${s}`) },
    );
    const ev = (
      type: 'API_KEY_REVOKED' | 'API_KEY_ACTIVATED' | 'TENANT_ROLE_REVOKED' | 'API_CALL',
      resource: string,
      data = {},
    ) => anyEvent({ type, tenantId: 'tnt_a', resource: { type: 'x', id: resource }, data });
    await handler(ev('API_KEY_REVOKED', 'key_1'));
    await handler(ev('API_KEY_ACTIVATED', 'key_2'));
    const revoked = {
      id: 'ras_1',
      subject_id: 'dashboard:alice',
      roles: [],
      permissions: [],
      status: 'REVOKED',
    };
    await handler(ev('TENANT_ROLE_REVOKED', 'ras_1', revoked));
    // Data off its type's schema changes nothing: the push reads by the schema, never by hand.
    await handler(ev('TENANT_ROLE_REVOKED', 'ras_2', { subject_id: 'dashboard:bob' }));
    await handler(ev('API_CALL', 'key_3'));
    expect(evictedKeys).toEqual(['key_1', 'key_2']);
    expect(evictedSubjects).toEqual(['tnt_a dashboard:alice']);
  });
});

describe('gateway: a token issued for one tenant is valid only in that tenant', () => {
  let wallet: JwksServer;
  let workforce: JwksServer;
  let jwt: JoseJwtAuthenticator;
  const [tenantA, tenantB] = [newId('tnt'), newId('tnt')];
  // The subject holds a role in every tenant: only the token's own tenant claim can refuse it.
  const everywhere = {
    resolve: async (tenant_id: string, subject_id: string) => ({
      tenant_id,
      subject_id,
      assignment_id: 'ras_x',
      roles: ['tenant_viewer' as const],
      permissions: ['mandates:read'],
      plan: 'beta' as const,
    }),
    evict: () => undefined,
  };

  beforeAll(async () => {
    [wallet, workforce] = await Promise.all([startJwksServer(), startJwksServer()]);
    const entry = (name: string, server: JwksServer, subject_scheme: string) => ({
      name,
      issuer: server.issuer,
      jwks_uri: server.jwksUri,
      audience: AUDIENCE,
      subject_scheme,
    });
    jwt = new JoseJwtAuthenticator(
      parseJwtIssuers(JSON.stringify([entry('wallet', wallet, 'wallet'), entry('corp', workforce, 'oidc')])),
      everywhere,
    );
  });
  afterAll(() => Promise.all([wallet.close(), workforce.close()]));

  it('when a wallet sign-in token of tenant A calls with tenant B, then 401; with tenant A, then it is the subject', async () => {
    const token = await wallet.sign({ sub: 'w123', aud: AUDIENCE, tid: tenantA });
    await expect(jwt.authenticate(token, tenantB)).rejects.toMatchObject({
      status: 401,
      message: 'This token was issued for another tenant',
    });
    await expect(jwt.authenticate(token, tenantA)).resolves.toMatchObject({
      tenantId: tenantA,
      actor: { type: 'user', subject_id: 'wallet:w123' },
    });
  });

  it('when a wallet token carries no tenant claim, then 401', async () => {
    const token = await wallet.sign({ sub: 'w123', aud: AUDIENCE });
    await expect(jwt.authenticate(token, tenantA)).rejects.toMatchObject({ status: 401 });
  });

  it("when an external OIDC token carries no tenant claim, or a provider's own `tid`, then it works in any tenant as before", async () => {
    for (const claims of [{}, { tid: '72f988bf-86f1-41af-91ab-2d7cd011db47' }]) {
      const token = await workforce.sign({ sub: 'bob', aud: AUDIENCE, ...claims });
      for (const tenant of [tenantA, tenantB])
        await expect(jwt.authenticate(token, tenant)).resolves.toMatchObject({ tenantId: tenant });
    }
  });
});
