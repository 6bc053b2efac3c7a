import { Redis } from 'ioredis';
import { startSentinelDeployment, type SentinelDeployment } from '../support/redis-sentinel';
import { apiClient, createTenant, eventually, startStack, type Stack } from '../support/stack';
import { Produced, countEvents, report, settle } from './workload';
import { WHOLE_WITHIN_MS } from './producers';

/**
 * The five services on a Redis Sentinel deployment (a master, one replica, three sentinels, all
 * real redis-server processes on ports of this file's own) while its master is SIGKILLed
 * (docs/DECISIONS.md, "Redis failover"; docs/TESTING.md, "Fault matrix"):
 * - a revoke or a keyed request answered 2xx is held by the replica, so neither a stale ALLOW nor a
 *   second run follows the promotion, also when the replica lags at the kill;
 * - under verify load: every 5xx a 503 with Retry-After, whole again within 10 s of the promotion,
 *   no verify answering from a version older than a lifecycle call that had returned, the limits
 *   within the bound of docs/API.md, "Rate limits and quotas", and every event stored once.
 */
const PLANS = JSON.stringify({
  // The load's tenant: no limit in the way.
  enterprise: {
    monthly_quota: 100_000_000,
    global: { rate: 100_000, burst: 100_000 },
    endpoints: {
      'mandates.create': { rate: 100_000, burst: 100_000 },
      'mandates.lifecycle': { rate: 100_000, burst: 100_000 },
      'apikeys.create': { rate: 100_000, burst: 100_000 },
    },
  },
  // The tenant whose lifecycle bucket is hammered across the failover.
  beta: {
    monthly_quota: 100_000_000,
    global: { rate: 100_000, burst: 100_000 },
    endpoints: { 'mandates.lifecycle': { rate: 5, burst: 10 } },
  },
});
const LIMITED = { rate: 5, burst: 10 };

const MANDATE = {
  principal: { id: 'user_s', type: 'person' },
  delegate: { id: 'agent_s', type: 'agent' },
  scope: { actions: ['payments:*'] },
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('Redis Sentinel failover under the five processes (real master, replica and sentinels)', () => {
  let deployment: SentinelDeployment;
  let stack: Stack;

  beforeAll(async () => {
    deployment = await startSentinelDeployment();
    stack = await startStack(
      {
        all: {
          REDIS_URL: 'redis://sentinel-ignored/0',
          REDIS_SENTINELS: deployment.sentinelList,
          REDIS_SENTINEL_NAME: deployment.name,
        },
        gateway: { PLAN_OVERRIDES: PLANS, UPSTREAM_TIMEOUT_MS: '30000' },
      },
      { replicas: { verify: 2 } },
    );
  }, 180_000);

  afterAll(async () => {
    await stack?.stop();
    await deployment?.stop();
  });

  /** The gateway's rate_limit_redis_fallbacks_total: checks its per-process limiter decided. */
  async function limiterFallbacks(): Promise<number> {
    const res = await fetch(`${stack.gateway.url}/metrics`, {
      headers: { authorization: `Bearer ${stack.operatorToken}` },
    });
    expect(res.status).toBe(200);
    return Number(/^rate_limit_redis_fallbacks_total(?:\{[^}]*\})? (\S+)$/m.exec(await res.text())?.[1] ?? 0);
  }

  /** SIGKILLs the current master; resolves with when, and when the sentinels named the replica in its place. */
  async function failOver(): Promise<{ killedAt: number; promotedAt: number; killed: number }> {
    const master = await deployment.currentMasterPort();
    await deployment.kill(master);
    const killedAt = Date.now();
    await eventually(
      async () => {
        const port = await deployment.currentMasterPort();
        return port !== master ? port : undefined;
      },
      30_000,
      'the promotion of the replica',
    );
    return { killedAt, promotedAt: Date.now(), killed: master };
  }

  it('when the replica lags and the master is SIGKILLed right after a revoke and a keyed key creation, then neither was answered from the master alone: no ALLOW for a returned revoke, one API key for the key', async () => {
    const { tenant, auth } = await createTenant(stack, { name: 'Lagging replica', plan: 'enterprise' });
    const api = apiClient(stack.gateway.url);
    const create = async () => {
      const res = await api('POST', '/v1/mandates', { auth, body: MANDATE });
      expect(res.status).toBe(201);
      return res.body.id as string;
    };
    const verify = (id: string) =>
      api('POST', '/v1/verify', { auth, body: { mandate_id: id, action: 'payments:create' } });
    const inStep = await create();
    const lagged = await create();
    expect((await verify(lagged)).body.decision).toBe('ALLOW');
    // With the replica in step, a revoke returns as before.
    expect((await api('POST', `/v1/mandates/${inStep}/revoke`, { auth, body: {} })).status).toBe(200);

    const master = await deployment.currentMasterPort();
    const replica = master === deployment.masterPort ? deployment.replicaPort : deployment.masterPort;
    const marker = `${stack.redisPrefix}lag-marker`;
    const keyBody = { name: 'failover', scopes: ['verify'] };
    const keyed = () =>
      api('POST', `/v1/tenants/${tenant.id}/api-keys`, {
        auth,
        body: keyBody,
        headers: { 'idempotency-key': 'sentinel-failover-key' },
      });
    // The replica stops (SIGSTOP) and the master drops its link: the master's writes from now on
    // are its alone, and the replica stays promotable (disconnected for seconds only).
    deployment.pause(replica);
    let revoke: Awaited<ReturnType<typeof api>>;
    let first: Awaited<ReturnType<typeof api>>;
    try {
      const direct = new Redis({ port: master, host: '127.0.0.1' });
      await direct.call('CLIENT', 'KILL', 'TYPE', 'replica');
      await direct.set(marker, 'only on the old master');
      direct.disconnect();
      revoke = await api('POST', `/v1/mandates/${lagged}/revoke`, { auth, body: {} });
      first = await keyed();
      await deployment.kill(master);
    } finally {
      deployment.resume(replica);
    }
    await eventually(
      async () => ((await deployment.currentMasterPort()) === replica ? true : undefined),
      30_000,
      'the promotion of the lagging replica',
    );
    // The killed node comes back empty as the new master's replica (a pod restarting).
    await deployment.rejoin(master);
    // The lag was real: what only the old master had is gone.
    const promoted = new Redis({ port: replica, host: '127.0.0.1' });
    try {
      expect(await promoted.exists(marker)).toBe(0);
    } finally {
      promoted.disconnect();
    }

    // Each answered 2xx, or 503 with Retry-After (never a 500).
    const answered = (res: typeof revoke) =>
      res.status === 503 ? `503 Retry-After ${res.headers.get('retry-after')}` : res.status;
    expect([200, '503 Retry-After 1']).toContain(answered(revoke));
    expect([201, '503 Retry-After 1']).toContain(answered(first));
    const after = await eventually(
      async () => {
        const res = await verify(lagged);
        return res.status === 200 ? res : undefined;
      },
      20_000,
      'a verify on the promoted replica',
    );
    // A revoke that returned holds; one refused changed nothing (the mandate is still ACTIVE).
    const state = (await api('GET', `/v1/mandates/${lagged}`, { auth })).body.state;
    expect({ revoke: revoke.status, decision: after.body.decision, state }).toEqual(
      revoke.status === 200
        ? { revoke: 200, decision: 'DENY', state: 'REVOKED' }
        : { revoke: 503, decision: 'ALLOW', state: 'ACTIVE' },
    );
    expect((await verify(inStep)).body).toMatchObject({ decision: 'DENY', reason: 'MANDATE_REVOKED' });

    // The key's retry after the promotion: one key made under it, whatever the first attempt answered.
    const retried = await eventually(
      async () => {
        const res = await keyed();
        return res.status === 503 ? undefined : res;
      },
      20_000,
      'the keyed retry to be answered',
    );
    expect(retried.status).toBe(201);
    const keys = await api('GET', `/v1/tenants/${tenant.id}/api-keys?limit=100`, { auth });
    expect(keys.status).toBe(200);
    const made = (keys.body.data as { name: string; key_id: string }[]).filter((k) => k.name === 'failover');
    expect(made.map((k) => k.key_id)).toEqual([retried.body.key_id]);
    process.stdout.write(
      `[fault] lagging replica: revoke ${revoke.status}, keyed create ${first.status}, retry ${retried.status}\n`,
    );
  }, 120_000);

  it('when the master is SIGKILLed under verify load, then every 5xx is a 503 with Retry-After, all is whole within 10 s of the promotion, no verify answers from a version older than a returned lifecycle call, the limit holds its bound, and every event is stored once', async () => {
    const load = await createTenant(stack, { name: 'Sentinel load', plan: 'enterprise' });
    const limited = await createTenant(stack, { name: 'Sentinel limits', plan: 'beta' });
    const api = apiClient(stack.gateway.url);
    const steady = (await api('POST', '/v1/mandates', { auth: load.auth, body: MANDATE })).body.id as string;
    const flipped = (await api('POST', '/v1/mandates', { auth: load.auth, body: MANDATE })).body.id as string;
    const hammered = (await api('POST', '/v1/mandates', { auth: limited.auth, body: MANDATE })).body
      .id as string;

    const produced = new Produced();
    const failures: { at: number; what: string }[] = [];
    const successes: number[] = [];
    let rid = 0;
    let stop = false;
    /** One call of the load's tenant: counted for its events, its 5xx checked. */
    const call = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
      const id = `sl-${rid++}`;
      try {
        const res = await api('POST', path, {
          auth: load.auth,
          body,
          headers: { 'x-request-id': id, ...headers },
        });
        produced.statuses.set(res.status, (produced.statuses.get(res.status) ?? 0) + 1);
        if (res.status !== 401) produced.byType.API_CALL.add(id);
        if (res.status >= 500) {
          produced.serverErrors.push({ id, path, status: res.status, body: res.body });
          if (res.status !== 503 || !res.headers.get('retry-after'))
            produced.clientErrors.push(`${id} ${path}: ${res.status} without Retry-After`);
          failures.push({ at: Date.now(), what: `${path} ${res.status}` });
        } else successes.push(Date.now());
        return { id, res };
      } catch (err) {
        produced.clientErrors.push(`${id}: ${String(err)}`);
        failures.push({ at: Date.now(), what: `${path} ${String(err)}` });
        return undefined;
      }
    };

    // Verify load on one mandate, and verifies of the mandate whose state flips, timed for the stale check.
    const verifies: { at: number; version: number; decision: string }[] = [];
    const verifier = (mandateId: string, timed: boolean) => async () => {
      while (!stop) {
        const at = performance.now();
        const done = await call('/v1/verify', { mandate_id: mandateId, action: 'payments:create' });
        if (done?.res.status === 200) {
          produced.byType.VERIFICATION_PERFORMED.add(done.id);
          if (timed)
            verifies.push({ at, version: done.res.body.mandate_version, decision: done.res.body.decision });
        }
        await sleep(5);
      }
    };
    // Lifecycle calls flipping `flipped` across the failover: each 200 is a version no later verify may predate.
    const returned: { at: number; version: number; wall: number }[] = [];
    const flipper = async () => {
      for (let i = 0; !stop;) {
        const done = await call(`/v1/mandates/${flipped}/${i % 2 === 0 ? 'suspend' : 'reactivate'}`, {});
        if (done?.res.status === 200) {
          returned.push({ at: performance.now(), version: done.res.body.version, wall: Date.now() });
          i++;
        }
        await sleep(50);
      }
    };
    // Keyed creates, each its own key: a 201's MANDATE_CREATED stored once.
    const creator = async () => {
      while (!stop) {
        const done = await call('/v1/mandates', MANDATE, { 'idempotency-key': `sk-${rid}` });
        if (done?.res.status === 201) produced.byType.MANDATE_CREATED.add(done.id);
        await sleep(50);
      }
    };
    // The limited caller: every answer but a 429 passed the limiter (docs/DEPLOYMENT.md, "Rate limits and quotas").
    const passes: number[] = [];
    const hammer = (w: number) => async () => {
      for (let i = w; !stop; i++) {
        const res = await api('POST', `/v1/mandates/${hammered}/${i % 2 === 0 ? 'suspend' : 'reactivate'}`, {
          auth: limited.auth,
          body: {},
        }).catch(() => undefined);
        if (res && res.status !== 429) passes.push(Date.now());
        await sleep(20);
      }
    };
    const fallbacksBefore = await limiterFallbacks();
    const started = Date.now();
    const workers = [
      ...[0, 1, 2].map(() => verifier(steady, false)()),
      ...[0, 1].map(() => verifier(flipped, true)()),
      flipper(),
      creator(),
      ...[0, 1].map((w) => hammer(w)()),
    ];

    await sleep(3_000);
    const { killedAt, promotedAt, killed } = await failOver();
    // Until a replica follows the promoted master, nothing can be made to outlive it: lifecycle
    // calls and keyed requests answer 503 (docs/DECISIONS.md, "Redis failover"). The killed node
    // comes back as its replica, as its pod would restart.
    await deployment.rejoin(killed);
    // Load goes on until the services have answered without a 5xx for 5 s after the promotion.
    await eventually(
      () => {
        const last = Math.max(promotedAt, ...failures.map((f) => f.at));
        return Date.now() - last > 5_000 ? true : undefined;
      },
      WHOLE_WITHIN_MS + 30_000,
      '5 s without a failure after the promotion',
      200,
    );
    stop = true;
    await Promise.all(workers);
    const ended = Date.now();
    const fellBack = (await limiterFallbacks()) - fallbacksBefore;

    // The revoke, then verifies after it: none an ALLOW.
    const revoke = await eventually(
      async () => {
        const done = await call(`/v1/mandates/${flipped}/revoke`, {});
        return done?.res.status === 200 ? done : undefined;
      },
      10_000,
      'the revoke',
    );
    const revokedAt = performance.now();
    returned.push({ at: revokedAt, version: revoke.res.body.version, wall: Date.now() });
    stop = false;
    const afterRevoke = [0, 1].map(() => verifier(flipped, true)());
    await sleep(1_000);
    stop = true;
    await Promise.all(afterRevoke);

    const stale = verifies.filter(
      (v) => v.version < returned.filter((l) => l.at < v.at).reduce((max, l) => Math.max(max, l.version), 1),
    );
    const staleAllow = verifies.filter((v) => v.at > revokedAt && v.decision === 'ALLOW');
    const lastFailure = Math.max(0, ...failures.map((f) => f.at));
    const wholeMs = Math.max(0, lastFailure - promotedAt);
    // The limit's bound: B + R·W in any window W, plus per gateway replica one burst and R·T for
    // the T seconds it decided alone, plus what the old master had counted and not yet copied (R·1 s here).
    const windowS = (ended - started) / 1000;
    const aloneS = (lastFailure - killedAt) / 1000 + 1;
    const bound =
      LIMITED.burst + LIMITED.rate * windowS + (LIMITED.burst + LIMITED.rate * aloneS) + LIMITED.rate;
    const counts = await settle(
      () => countEvents(stack.services.audit.url, stack.internalSecret, load.tenant.id, produced),
      60_000,
    );
    report('Redis Sentinel master SIGKILLed under verify load', counts, {
      promotionMs: promotedAt - killedAt,
      wholeMs,
      statuses: Object.fromEntries(produced.statuses),
      lifecycleReturned: returned.length,
      verifiesTimed: verifies.length,
      limiterFallbacks: fellBack,
      limitPasses: passes.length,
      limitBound: Math.floor(bound),
    });

    expect(produced.clientErrors).toEqual([]);
    expect({ stale: stale.length, staleAllow: staleAllow.length }).toEqual({ stale: 0, staleAllow: 0 });
    // The check spans the failover: lifecycle calls returned before the kill and after the promotion.
    expect(returned.filter((l) => l.wall < killedAt).length).toBeGreaterThan(3);
    expect(returned.filter((l) => l.wall > promotedAt).length).toBeGreaterThan(3);
    expect(verifies.filter((v) => v.at > revokedAt).length).toBeGreaterThan(10);
    expect(wholeMs).toBeLessThanOrEqual(WHOLE_WITHIN_MS);
    expect(successes.filter((at) => at > lastFailure).length).toBeGreaterThan(100);
    // The bound was tested where it differs from the limit: the gateway decided alone for a while.
    expect(fellBack).toBeGreaterThan(0);
    expect(passes.length).toBeLessThanOrEqual(bound);
    // The limiter did refuse: the hammering was over the limit all along.
    expect(passes.length).toBeGreaterThan(LIMITED.burst + LIMITED.rate * (windowS - aloneS - 2));
    for (const c of counts)
      expect({ type: c.type, missing: c.missing, duplicates: c.duplicates }).toEqual({
        type: c.type,
        missing: 0,
        duplicates: 0,
      });
  }, 180_000);
});
