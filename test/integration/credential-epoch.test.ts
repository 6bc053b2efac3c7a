import express from 'express';
import { INTERNAL_SERVICES, systemClock } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import {
  ServiceClient,
  callerOf,
  listen,
  requireInternalToken,
  type RunningServer,
  type UpstreamRequest,
} from '@mandate/shared/http';
import { testTokens } from '@mandate/shared/testing';
import {
  createApp as createIdentity,
  MemoryIdentityStore,
  type IdentityApp,
} from '@mandate/identity/testing';
import {
  CachedKeyResolver,
  CachedSubjectResolver,
  CredentialEpochCheck,
  JoseJwtAuthenticator,
  createApp,
  parseJwtIssuers,
  type GatewayApp,
} from '@mandate/gateway/testing';
import { eventually } from '../support/eventually';
import { dashboardIssuers, startJwksServer, type JwksServer } from '../support/jwks-server';
import { NullPublisher } from './in-process-upstreams';

const silent = createLogger('credential-epoch-test', 'silent');
const OPERATOR = 'operator-token-for-credential-epoch-tests';
const AUDIENCE = 'api';
/** Long enough that only the epoch check can explain a refusal within the budget: no push here. */
const CACHE_TTL_MS = 60_000;
const CHECK_MS = 250;
const BUDGET_MS = 1000;
/** A staging key's activation window in this file. */
const STAGING_TTL_MS = 2500;

/**
 * Counts identity's calls by path (which ones a gateway makes while nothing changes), and can
 * cut the credential feed (refused from then on) or stall it (open, but nothing arrives).
 */
class CountingClient extends ServiceClient {
  readonly calls = new Map<string, number>();
  feedRefused = false;
  feedStalled = false;
  private readonly feeds = new Set<AbortController>();
  override request(req: UpstreamRequest) {
    this.calls.set(req.path, (this.calls.get(req.path) ?? 0) + 1);
    return super.request(req);
  }
  override async hold(req: UpstreamRequest) {
    if (this.feedRefused) throw new Error('feed refused by the test');
    const cut = new AbortController();
    req.signal?.addEventListener('abort', () => cut.abort());
    this.feeds.add(cut);
    const answer = await super.hold({ ...req, signal: cut.signal });
    const stalled = () => this.feedStalled;
    const done = () => this.feeds.delete(cut);
    async function* unlessStalled() {
      try {
        for await (const chunk of answer.body) if (!stalled()) yield chunk;
      } finally {
        done();
      }
    }
    return { status: answer.status, body: unlessStalled() };
  }
  /** Cuts the feeds open now; new ones are refused. */
  cutFeed() {
    this.feedRefused = true;
    for (const cut of this.feeds) cut.abort();
  }
  restoreFeed() {
    this.feedRefused = false;
    this.feedStalled = false;
  }
  count(path: string) {
    return this.calls.get(path) ?? 0;
  }
}

/**
 * docs/DECISIONS.md, "Credential changes": a gateway that receives no credential event at all
 * (no RabbitMQ here, as with the broker cut) still refuses a revoked key, a downgraded role and an
 * expired staging key on time — through identity's credential feed, or through the epoch check
 * alone — and asks identity nothing per key while nothing changes. Real identity in-process
 * (memory store) over HTTP; mandates is an echo of the caller the gateway established.
 */
describe.each([
  { safetyNet: 'the epoch check alone', feed: false },
  { safetyNet: "identity's credential feed", feed: true },
])('gateway: $safetyNet without the push (real identity in-process)', ({ feed }) => {
  let identity: IdentityApp;
  let identityServer: RunningServer;
  let echo: RunningServer;
  let jwks: JwksServer;
  let identityClient: CountingClient;
  let keys: CachedKeyResolver;
  let subjects: CachedSubjectResolver;
  let check: CredentialEpochCheck;
  let gateway: GatewayApp;
  let base: string;
  const clients: ServiceClient[] = [];

  beforeAll(async () => {
    jwks = await startJwksServer();
    const echoApp = express();
    echoApp.use(requireInternalToken(testTokens, INTERNAL_SERVICES));
    echoApp.all('/{*rest}', (req, res) => {
      const caller = callerOf(req);
      res.json({ tenant: caller.tenantId, permissions: caller.permissions });
    });
    echo = await listen(echoApp, 0);
    identity = createIdentity({
      store: new MemoryIdentityStore(),
      publisher: new NullPublisher(),
      tokens: testTokens,
      logger: silent,
      clock: systemClock,
      stagingKeyTtlMs: STAGING_TTL_MS,
    });
    identityServer = await identity.start(0);
    identityClient = new CountingClient([identityServer.url]);
    const echoClient = new ServiceClient([echo.url]);
    clients.push(identityClient, echoClient);
    keys = new CachedKeyResolver(identityClient, testTokens, CACHE_TTL_MS);
    subjects = new CachedSubjectResolver(identityClient, testTokens, CACHE_TTL_MS);
    check = new CredentialEpochCheck(
      identityClient,
      testTokens,
      [keys, subjects],
      CHECK_MS,
      silent,
      Date.now,
      { feed },
    );
    check.start();
    if (feed) await eventually(() => (check.feedLive ? true : undefined), 10_000, 'the feed live');
    gateway = createApp({
      tokens: testTokens,
      logger: silent,
      publisher: new NullPublisher(),
      upstreams: { mandates: echoClient, verify: echoClient, identity: identityClient, audit: echoClient },
      keys,
      operatorToken: OPERATOR,
      jwt: new JoseJwtAuthenticator(parseJwtIssuers(dashboardIssuers(jwks, AUDIENCE)), subjects),
      openApiDocument: () => ({}),
    });
    base = (await gateway.start(0)).url;
  });

  afterAll(async () => {
    await check?.stop();
    await gateway?.stop();
    await Promise.all(clients.map((c) => c.close()));
    await identity?.stop();
    await echo?.close();
    await jwks?.close();
  });

  const call = async (method: string, path: string, auth: string, body?: unknown, headers = {}) => {
    const res = await fetch(base + path, {
      method,
      headers: {
        authorization: `Bearer ${auth}`,
        ...(body ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };

  const tenant = async (admin = 'dashboard:owner') => {
    const res = await call('POST', '/v1/platform/tenants', OPERATOR, {
      name: 'Epoch',
      plan: 'enterprise',
      admin_subject_id: admin,
    });
    expect(res.status).toBe(201);
    const id = res.body.tenant.id as string;
    return { id, auth: `${id}:${res.body.api_key.api_key}` };
  };

  const newKey = async (t: { id: string; auth: string }) => {
    const res = await call('POST', `/v1/tenants/${t.id}/api-keys`, t.auth, {
      name: 'k',
      scopes: ['mandates:read'],
    });
    expect(res.status).toBe(201);
    return { keyId: res.body.key_id as string, auth: `${t.id}:${res.body.api_key}` };
  };

  /** Polls until `refused` holds for the answer; ms from `since` to then. */
  async function refusedAfter(
    request: () => Promise<{ status: number; body: Record<string, any> }>,
    refused: (res: { status: number; body: Record<string, any> }) => boolean,
    since: number,
  ): Promise<number> {
    await eventually(async () => (refused(await request()) ? true : undefined), 10_000, 'the refusal', 5);
    return performance.now() - since;
  }

  /** Revokes `k`; ms from the revoke returning to the key's first refusal. */
  async function revokeAndTimeRefusal(t: { id: string; auth: string }, k: { keyId: string; auth: string }) {
    const revoked = await call('POST', `/v1/tenants/${t.id}/api-keys/${k.keyId}/revoke`, t.auth);
    const since = performance.now();
    expect(revoked.status).toBe(200);
    return refusedAfter(
      () => call('GET', '/v1/mandates', k.auth),
      (res) => res.status === 401,
      since,
    );
  }

  /** `n` new keys of a new tenant, each used once (so cached). */
  async function keysInUse(n: number) {
    const t = await tenant();
    const inUse = await Promise.all(Array.from({ length: n }, () => newKey(t)));
    for (const k of inUse) expect((await call('GET', '/v1/mandates', k.auth)).status).toBe(200);
    return inUse;
  }

  const checkOnly = feed ? () => undefined : it;
  const feedOnly = feed ? it : () => undefined;

  checkOnly(
    'when keys in use are not changing, then the gateway asks identity about none of them again, only for the epoch',
    async () => {
      const inUse = await keysInUse(10);
      const resolvesBefore = identityClient.count('/internal/v1/keys/resolve');
      const checksBefore = identityClient.count('/internal/v1/credentials/changes');
      // Well over the old refresh period (250–375 ms per key) and several check intervals.
      const until = performance.now() + 1500;
      while (performance.now() < until)
        for (const k of inUse) expect((await call('GET', '/v1/mandates', k.auth)).status).toBe(200);
      await eventually(
        () =>
          identityClient.count('/internal/v1/credentials/changes') - checksBefore >= 3 ? true : undefined,
        10_000,
        'three epoch checks',
      );
      expect(identityClient.count('/internal/v1/keys/resolve')).toBe(resolvesBefore);
      expect(identityClient.count('/internal/v1/keys/resolve-many')).toBe(0);
    },
    30_000,
  );

  it('when a key is revoked, then it is refused within 1 s of the revoke returning, by the safety net alone', async () => {
    const t = await tenant();
    for (let round = 0; round < 3; round++) {
      const k = await newKey(t);
      expect((await call('GET', '/v1/mandates', k.auth)).status).toBe(200);
      expect(await revokeAndTimeRefusal(t, k)).toBeLessThan(BUDGET_MS);
    }
  }, 30_000);

  it("when a subject's role is downgraded, then its JWT carries the new permissions within 1 s of the change returning", async () => {
    const t = await tenant();
    const assigned = await call('POST', `/v1/tenants/${t.id}/role-assignments`, t.auth, {
      subject_id: 'dashboard:epoch-user',
      roles: ['tenant_admin'],
    });
    expect(assigned.status).toBe(201);
    const token = await jwks.sign({ sub: 'epoch-user', aud: AUDIENCE });
    const asUser = () => call('GET', '/v1/mandates', token, undefined, { 'x-tenant-id': t.id });
    expect((await asUser()).body.permissions).toContain('mandates:write');
    const patched = await call('PATCH', `/v1/tenants/${t.id}/role-assignments/${assigned.body.id}`, t.auth, {
      roles: ['tenant_viewer'],
    });
    const since = performance.now();
    expect(patched.status).toBe(200);
    const ms = await refusedAfter(
      asUser,
      (res) => res.status === 200 && !(res.body.permissions as string[]).includes('mandates:write'),
      since,
    );
    expect(ms).toBeLessThan(BUDGET_MS);
  }, 30_000);

  it("when a staging key's activation window closes, then it is refused within 1 s of that moment, though nothing revoked it", async () => {
    const t = await tenant();
    const old = await newKey(t);
    const rotated = await call('POST', `/v1/tenants/${t.id}/api-keys/${old.keyId}/rotate`, t.auth);
    expect(rotated.status).toBe(201);
    const staging = `${t.id}:${rotated.body.api_key}`;
    const closes = Date.parse(rotated.body.created_at as string) + STAGING_TTL_MS;
    // Used, hence cached and vouched for by every check, until its window closes.
    expect((await call('GET', '/v1/mandates', staging)).status).toBe(200);
    await eventually(
      async () => ((await call('GET', '/v1/mandates', staging)).status === 401 ? true : undefined),
      10_000,
      'the staging key refused',
      5,
    );
    const late = Date.now() - closes;
    expect(late).toBeGreaterThanOrEqual(0);
    expect(late).toBeLessThan(BUDGET_MS);
    // The key it replaces is still active.
    expect((await call('GET', '/v1/mandates', old.auth)).status).toBe(200);
  }, 30_000);

  it('when a tenant-wide change is listed, then every cached credential of that tenant is asked about again, and no other', async () => {
    const [a, b] = [await tenant(), await tenant()];
    const [ka, kb] = [await newKey(a), await newKey(b)];
    for (const k of [ka, kb]) expect((await call('GET', '/v1/mandates', k.auth)).status).toBe(200);
    const before = identityClient.count('/internal/v1/keys/resolve');
    keys.drop([{ kind: 'tenant', tenant_id: a.id }]);
    for (const k of [ka, kb]) expect((await call('GET', '/v1/mandates', k.auth)).status).toBe(200);
    expect(identityClient.count('/internal/v1/keys/resolve')).toBe(before + 1);
  });

  feedOnly(
    'when keys in use are not changing and the feed is live, then the gateway asks identity nothing at all',
    async () => {
      const inUse = await keysInUse(10);
      const before = new Map(identityClient.calls);
      // Several ticks and check intervals, the caches still trusted (only the feed vouches for them).
      const until = performance.now() + 1500;
      while (performance.now() < until)
        for (const k of inUse) expect((await call('GET', '/v1/mandates', k.auth)).status).toBe(200);
      expect(identityClient.calls).toEqual(before);
      expect(check.feedLive).toBe(true);
    },
    30_000,
  );

  const feedStops = [
    { how: 'cut', stop: (c: CountingClient) => c.cutFeed() },
    { how: 'silent', stop: (c: CountingClient) => (c.feedStalled = true) },
  ];
  if (feed)
    it.each(feedStops)(
      'when the feed is $how, then the epoch check takes over and a revoke is still refused within 1 s',
      async ({ stop }) => {
        const t = await tenant();
        const k = await newKey(t);
        expect((await call('GET', '/v1/mandates', k.auth)).status).toBe(200);
        const checksBefore = identityClient.count('/internal/v1/credentials/changes');
        stop(identityClient);
        try {
          expect(await revokeAndTimeRefusal(t, k)).toBeLessThan(BUDGET_MS);
          expect(check.feedLive).toBe(false);
          expect(identityClient.count('/internal/v1/credentials/changes')).toBeGreaterThan(checksBefore);
        } finally {
          identityClient.restoreFeed();
        }
        // Back: the feed reconnects and vouches again.
        await eventually(() => (check.feedLive ? true : undefined), 15_000, 'the feed live again');
      },
      30_000,
    );
});
