import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { AMQP_URL, apiClient, createTenant, verifyCounters, type Stack, startStack } from '../support/stack';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';
import { Produced, countEvents, report, settle, type Counts } from './workload';
import { WHOLE_WITHIN_MS } from './producers';

/**
 * Rows of the fault matrix (docs/TESTING.md, "Fault matrix") that need a Redis of their own or a
 * full event spool: the five services as processes, their Redis a private redis-server on a port of
 * this test's own (restarted empty, or hung through a TCP proxy), their RabbitMQ the shared one
 * through a proxy this test cuts, gateway and verify with a 1 MB event spool
 * (`EVENT_SPOOL_MAX_MB`). Each row: nothing lost, nothing doubled, every 5xx a 503 with
 * Retry-After, and the service whole again within 10 s of the fault's end (asserted and printed).
 */
const REDIS_PORT = 16321;

const PLANS = JSON.stringify({
  enterprise: {
    monthly_quota: 100_000_000,
    global: { rate: 100_000, burst: 100_000 },
    endpoints: { 'mandates.create': { rate: 100_000, burst: 100_000 } },
  },
  // The tenant whose create limit is checked across the restart: three at once, then one a second.
  beta: {
    monthly_quota: 100_000,
    global: { rate: 1_000, burst: 1_000 },
    endpoints: { 'mandates.create': { rate: 1, burst: 3 } },
  },
});

const MANDATE = {
  principal: { id: 'user_r', type: 'person' },
  delegate: { id: 'agent_r', type: 'agent' },
  scope: { actions: ['payments:*'], constraints: { max_amount: 50_000, currency: 'EUR' } },
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A redis-server on `port`, no persistence: killed and started again, it comes back empty. */
function startRedis(port: number, dir: string): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore', cwd: dir },
  );
  return (async () => {
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`redis-server on ${port} exited with ${child.exitCode}`);
      const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
      probe.on('error', () => undefined);
      const ok = await probe
        .connect()
        .then(() => probe.ping())
        .then(() => true)
        .catch(() => false);
      probe.disconnect();
      if (ok) return child;
      if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not answer`);
      await sleep(100);
    }
  })();
}

async function killRedis(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}

/** What a load saw: the events its 2xx answers owe, every 5xx, and how long each answer took. */
class Seen extends Produced {
  /** 5xx answers without Retry-After, or other than 503: never allowed. */
  readonly undocumented: string[] = [];
  readonly unavailable = new Map<string, number>();
  maxLatencyMs = 0;
}

describe('fault matrix: Redis restarted empty or hung, event spool full (private Redis, proxied RabbitMQ)', () => {
  let redisDir: string;
  let redis: ChildProcess;
  let redisProxy: TcpProxy;
  let amqpProxy: TcpProxy;
  let stack: Stack;
  let api: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    redisDir = await mkdtemp(path.join(tmpdir(), 'fault-redis-'));
    redis = await startRedis(REDIS_PORT, redisDir);
    redisProxy = await startTcpProxy('127.0.0.1', REDIS_PORT);
    const amqp = new URL(AMQP_URL);
    amqpProxy = await startTcpProxy(amqp.hostname, Number(amqp.port || 5672));
    amqp.hostname = '127.0.0.1';
    amqp.port = String(amqpProxy.port);
    const spool = { EVENT_SPOOL_MAX_MB: '1' };
    stack = await startStack({
      all: {
        AMQP_URL: amqp.toString().replace(/\/$/, ''),
        REDIS_URL: `redis://127.0.0.1:${redisProxy.port}`,
      },
      // Room for the machine's load: this suite is about what is answered, not how fast.
      gateway: { PLAN_OVERRIDES: PLANS, UPSTREAM_TIMEOUT_MS: '30000', ...spool },
      verify: { MANDATES_TIMEOUT_MS: '10000', ...spool },
    });
    api = apiClient(stack.gateway.url);
  }, 180_000);

  afterAll(async () => {
    await stack?.stop();
    await redisProxy?.close();
    await amqpProxy?.close();
    if (redis) await killRedis(redis);
    if (redisDir) await rm(redisDir, { recursive: true, force: true });
  }, 60_000);

  async function tenant(name: string, plan: 'beta' | 'enterprise' = 'enterprise') {
    const created = await createTenant(stack, { name, plan });
    return { tenantId: created.tenant.id, auth: created.auth };
  }

  /** One call through the gateway, counted in `seen` (its API_CALL owed unless `unaudited`). */
  async function call(
    seen: Seen,
    auth: string,
    rid: string,
    method: string,
    urlPath: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) {
    const started = Date.now();
    const res = await api(method, urlPath, { auth, body, headers: { 'x-request-id': rid, ...headers } });
    seen.maxLatencyMs = Math.max(seen.maxLatencyMs, Date.now() - started);
    seen.statuses.set(res.status, (seen.statuses.get(res.status) ?? 0) + 1);
    if (res.status >= 500) {
      const retryAfter = Number(res.headers.get('retry-after'));
      if (res.status !== 503 || !(retryAfter > 0))
        seen.undocumented.push(
          `${rid} ${urlPath}: ${res.status} retry-after=${res.headers.get('retry-after')} ${res.text}`,
        );
      const message = String(res.body?.message);
      seen.unavailable.set(message, (seen.unavailable.get(message) ?? 0) + 1);
    }
    // Every authenticated call is audited (docs/DECISIONS.md, "Audit events"), except the one the
    // gateway refuses because its API_CALL cannot be kept (docs/DECISIONS.md, "Event spool full").
    if (!(res.status === 503 && String(res.body?.message).startsWith('API call events')))
      seen.byType.API_CALL.add(rid);
    return res;
  }

  /**
   * `concurrency` workers creating and verifying mandates (a verify with `resource`, when given)
   * until `stop()` says so; every 2xx's event is owed.
   */
  function load(
    auth: string,
    label: string,
    seen: Seen,
    stop: () => boolean,
    resource?: string,
    concurrency = 10,
  ) {
    let next = 0;
    const worker = async () => {
      while (!stop()) {
        const i = next++;
        try {
          const created = await call(seen, auth, `${label}-c-${i}`, 'POST', '/v1/mandates', MANDATE);
          if (created.status === 201) seen.byType.MANDATE_CREATED.add(`${label}-c-${i}`);
          else continue;
          const verified = await call(seen, auth, `${label}-v-${i}`, 'POST', '/v1/verify', {
            mandate_id: created.body.id,
            action: 'payments:create',
            amount: 1_200,
            currency: 'EUR',
            ...(resource ? { resource } : {}),
          });
          if (verified.status === 200) seen.byType.VERIFICATION_PERFORMED.add(`${label}-v-${i}`);
          seen.done++;
        } catch (err) {
          seen.clientErrors.push(`${label}-${i}: ${String(err)}`);
        }
      }
    };
    return Promise.all(Array.from({ length: concurrency }, worker));
  }

  /** What audit stored of the tenant's events, once nothing is missing (at most 90 s). */
  const stored = (tenantId: string, seen: Seen) =>
    settle(() => countEvents(stack.services.audit.url, stack.internalSecret, tenantId, seen), 90_000);

  function expectNothingLostOrDoubled(counts: Counts[], seen: Seen) {
    expect(seen.clientErrors).toEqual([]);
    expect(seen.undocumented).toEqual([]);
    for (const c of counts)
      expect({ type: c.type, stored: c.stored, duplicates: c.duplicates }).toEqual({
        type: c.type,
        stored: c.produced,
        duplicates: 0,
      });
  }

  /**
   * Whole again: a create with an Idempotency-Key (Redis for the key), its revocation (the
   * snapshot fence) and a verify of it that says DENY, each answered as when nothing failed.
   * Polled from `since`; answers the milliseconds it took.
   */
  async function wholeAgain(auth: string, since: number, label: string): Promise<number> {
    const deadline = Date.now() + 60_000;
    for (let attempt = 0; ; attempt++) {
      const created = await api('POST', '/v1/mandates', {
        auth,
        body: MANDATE,
        headers: { 'idempotency-key': `${label}-whole-${attempt}` },
      });
      const revoked =
        created.status === 201
          ? await api('POST', `/v1/mandates/${created.body.id}/revoke`, { auth, body: {} })
          : undefined;
      const verified =
        revoked?.status === 200
          ? await api('POST', '/v1/verify', {
              auth,
              body: { mandate_id: created.body.id, action: 'payments:create', amount: 1, currency: 'EUR' },
            })
          : undefined;
      if (verified?.status === 200 && verified.body.decision === 'DENY') return Date.now() - since;
      if (Date.now() > deadline)
        throw new Error(
          `not whole 60 s after ${label}: ${created.status} ${revoked?.status} ${verified?.text}`,
        );
      await sleep(100);
    }
  }

  async function verifyDecision(auth: string, mandateId: string) {
    const res = await api('POST', '/v1/verify', {
      auth,
      body: { mandate_id: mandateId, action: 'payments:create', amount: 100, currency: 'EUR' },
    });
    expect(res.status).toBe(200);
    return `${res.body.decision}${res.body.reason ? ` ${res.body.reason}` : ''}`;
  }

  it('when Redis is killed under load and started again empty, then verify decisions stay correct (revoked is DENY), limits, keys and snapshots behave as documented, nothing is lost or doubled, and the service is whole within 10 s', async () => {
    const { tenantId, auth } = await tenant('redis-restart');
    const limited = await tenant('redis-restart-limits', 'beta');
    // Before: one mandate revoked (its snapshot says REVOKED), one active, one key answered.
    const revoked = await api('POST', '/v1/mandates', { auth, body: MANDATE });
    const active = await api('POST', '/v1/mandates', { auth, body: MANDATE });
    expect([revoked.status, active.status]).toEqual([201, 201]);
    expect(await verifyDecision(auth, revoked.body.id)).toBe('ALLOW OK');
    expect((await api('POST', `/v1/mandates/${revoked.body.id}/revoke`, { auth, body: {} })).status).toBe(
      200,
    );
    expect(await verifyDecision(auth, revoked.body.id)).toBe('DENY MANDATE_REVOKED');
    expect(await verifyDecision(auth, active.body.id)).toBe('ALLOW OK');
    const keyed = (key: string) =>
      api('POST', '/v1/mandates', { auth, body: MANDATE, headers: { 'idempotency-key': key } });
    const first = await keyed('before-restart');
    expect(first.status).toBe(201);
    expect((await keyed('before-restart')).body.id).toBe(first.body.id);
    const snapshotsBefore = await verifyCounters(
      stack.internalSecret,
      stack.services.verify.url,
      'restart-before',
    );

    const seen = new Seen();
    let stopped = false;
    const running = load(auth, 'restart', seen, () => stopped);
    await sleep(1_000);
    await killRedis(redis);
    const killedAtDone = seen.done;
    // Down for 2 s under load (the outage's length is the scenario), then back on the same port, empty.
    await sleep(2_000);
    redis = await startRedis(REDIS_PORT, redisDir);
    const backAt = Date.now();
    const recoveryMs = await wholeAgain(auth, backAt, 'the Redis restart');
    // More load on the empty Redis, then stop.
    await sleep(1_000);
    stopped = true;
    await running;

    // Snapshots: gone, never a different answer (docs/OPERATIONS.md, "Backup and restore"): the
    // revoked mandate read from the mandates service is still DENY, the active one still ALLOW.
    expect(await verifyDecision(auth, revoked.body.id)).toBe('DENY MANDATE_REVOKED');
    expect(await verifyDecision(auth, active.body.id)).toBe('ALLOW OK');
    const direct = new Redis({ port: REDIS_PORT, host: '127.0.0.1' });
    try {
      // Refilled by that read: the snapshot is in the new Redis again, at the revoked version.
      const refilled = await direct.hget(`${stack.redisPrefix}snapshot:${tenantId}:${revoked.body.id}`, 'v');
      expect(refilled).toBe('2');
    } finally {
      direct.disconnect();
    }
    const snapshotsAfter = await verifyCounters(
      stack.internalSecret,
      stack.services.verify.url,
      'restart-after',
    );
    expect(snapshotsAfter.snapshot_misses!).toBeGreaterThan(snapshotsBefore.snapshot_misses!);
    // Idempotency records: gone, so the key answered before runs again once at the gateway
    // (docs/OPERATIONS.md), where mandates, which keeps the key with the mandate, answers with the
    // one it made first; from then on the gateway replays that answer.
    const again = await keyed('before-restart');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(again.body.id).toBe(first.body.id);
    const replayed = await keyed('before-restart');
    expect([replayed.body.id, replayed.headers.get('idempotent-replayed')]).toEqual([again.body.id, 'true']);
    // Rate limits: counted from zero in the new Redis, and enforced: three at once, then 429.
    const burst: { status: number; retryAfter: string | null }[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await api('POST', '/v1/mandates', { auth: limited.auth, body: MANDATE });
      burst.push({ status: res.status, retryAfter: res.headers.get('retry-after') });
    }
    expect(burst.filter((b) => b.status === 201).length).toBeGreaterThanOrEqual(1);
    expect(burst.filter((b) => b.status === 201).length).toBeLessThanOrEqual(4);
    expect(burst.some((b) => b.status === 429 && Number(b.retryAfter) > 0)).toBe(true);

    const counts = await stored(tenantId, seen);
    report('Redis killed under load, back empty after 2 s', counts, {
      mandates_done_at_kill: killedAtDone,
      mandates_done: seen.done,
      statuses: Object.fromEntries(seen.statuses),
      unavailable: Object.fromEntries(seen.unavailable),
      max_latency_ms: seen.maxLatencyMs,
      whole_ms_after_redis_back: recoveryMs,
    });
    expectNothingLostOrDoubled(counts, seen);
    expect(seen.done).toBeGreaterThan(killedAtDone);
    expect(recoveryMs).toBeLessThanOrEqual(WHOLE_WITHIN_MS);
  }, 180_000);

  it('when Redis hangs (connections open, nothing answered) for 8 s under load, then no request waits for it: keyed POSTs and lifecycle calls answer 503 with Retry-After within their 1 s command bounds, the rest keeps flowing, nothing is lost or doubled, and the service is whole within 10 s', async () => {
    const { tenantId, auth } = await tenant('redis-hang');
    const toRevoke = await api('POST', '/v1/mandates', { auth, body: MANDATE });
    expect(toRevoke.status).toBe(201);
    const seen = new Seen();
    let stopped = false;
    const running = load(auth, 'hang', seen, () => stopped);
    await sleep(1_000);
    redisProxy.hang();
    const hungAt = Date.now();
    const doneAtHang = seen.done;
    // Asked while it hangs: what needs Redis and has no fallback (docs/DEPLOYMENT.md, "Idempotency"
    // and "Consistency and expiry") refuses promptly instead of waiting the hang out.
    await sleep(1_000);
    const timed = async (send: () => Promise<{ status: number; headers: Headers }>) => {
      const started = Date.now();
      const res = await send();
      return {
        status: res.status,
        retryAfter: Number(res.headers.get('retry-after')) > 0,
        ms: Date.now() - started,
      };
    };
    const keyedWhileHung = await timed(() =>
      api('POST', '/v1/mandates', { auth, body: MANDATE, headers: { 'idempotency-key': 'while-hung' } }),
    );
    const revokeWhileHung = await timed(() =>
      api('POST', `/v1/mandates/${toRevoke.body.id}/revoke`, { auth, body: {} }),
    );
    // The hang's length is the scenario: 8 s in all.
    await sleep(Math.max(0, 8_000 - (Date.now() - hungAt)));
    const doneDuringHang = seen.done - doneAtHang;
    const maxLatencyDuringHang = seen.maxLatencyMs;
    redisProxy.restore();
    const recoveryMs = await wholeAgain(auth, Date.now(), 'the Redis hang');
    stopped = true;
    await running;
    // The revocation refused while Redis hung changed nothing, and runs once Redis answers.
    expect(await verifyDecision(auth, toRevoke.body.id)).toBe('ALLOW OK');
    expect((await api('POST', `/v1/mandates/${toRevoke.body.id}/revoke`, { auth, body: {} })).status).toBe(
      200,
    );
    expect(await verifyDecision(auth, toRevoke.body.id)).toBe('DENY MANDATE_REVOKED');

    const counts = await stored(tenantId, seen);
    report('Redis hung 8 s under load', counts, {
      mandates_done_during_hang: doneDuringHang,
      statuses: Object.fromEntries(seen.statuses),
      unavailable: Object.fromEntries(seen.unavailable),
      max_latency_ms_during_hang: maxLatencyDuringHang,
      keyed_post_while_hung: keyedWhileHung,
      revoke_while_hung: revokeWhileHung,
      whole_ms_after_hang_end: recoveryMs,
    });
    expectNothingLostOrDoubled(counts, seen);
    expect(keyedWhileHung).toMatchObject({ status: 503, retryAfter: true });
    expect(revokeWhileHung).toMatchObject({ status: 503, retryAfter: true });
    // Bounded by the clients' 1 s command timeouts (docs/DEPLOYMENT.md, "Rate limits and quotas"), with
    // room for the machine's load; a request waiting for Redis would have taken the whole 8 s.
    expect(Math.max(keyedWhileHung.ms, revokeWhileHung.ms)).toBeLessThan(6_000);
    expect(doneDuringHang).toBeGreaterThan(0);
    expect(maxLatencyDuringHang).toBeLessThan(8_000);
    expect(recoveryMs).toBeLessThanOrEqual(WHOLE_WITHIN_MS);
  }, 180_000);

  it('when the broker is cut and the 1 MB event spools of gateway and verify fill up, then calls whose event cannot be kept answer 503 with Retry-After (never a 2xx whose event is lost), and once the broker is back the spools drain, every event of a 2xx is stored once, and the service is whole within 10 s', async () => {
    const { tenantId, auth } = await tenant('spool-full');
    const seen = new Seen();
    // Long resources make verify's events big (about 2 KB each), long paths the gateway's (about 1.5 KB).
    const resource = `acct:${'r'.repeat(1_000)}`;
    const verifyFull = () => [...seen.unavailable.keys()].some((m) => m.startsWith('Verification events'));
    const gatewayFull = () => [...seen.unavailable.keys()].some((m) => m.startsWith('API call events'));
    const deadline = Date.now() + 120_000;
    const mandates: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await call(seen, auth, `spool-c-${i}`, 'POST', '/v1/mandates', MANDATE);
      expect(res.status).toBe(201);
      seen.byType.MANDATE_CREATED.add(`spool-c-${i}`);
      mandates.push(res.body.id);
    }
    /** `workers` loops of `send(worker, i)` until `full()` (or the deadline). */
    const until = (full: () => boolean, workers: number, send: (w: number, i: number) => Promise<void>) =>
      Promise.all(
        Array.from({ length: workers }, async (_, w) => {
          for (let i = 0; !full() && Date.now() < deadline; i++)
            await send(w, i).catch((err) => seen.clientErrors.push(`${w}-${i}: ${String(err)}`));
        }),
      );
    amqpProxy.cut();
    let brokerBackAt = 0;
    try {
      // Verify's spool first (its events are the bigger), then the gateway's with calls verify never sees.
      await until(verifyFull, 6, async (w, i) => {
        const rid = `spool-v-${w}-${i}`;
        const res = await call(seen, auth, rid, 'POST', '/v1/verify', {
          mandate_id: mandates[w],
          action: 'payments:create',
          amount: 1_200,
          currency: 'EUR',
          resource,
        });
        if (res.status === 200) seen.byType.VERIFICATION_PERFORMED.add(rid);
      });
      await until(gatewayFull, 6, async (w, i) => {
        await call(seen, auth, `spool-g-${w}-${i}`, 'GET', `/v1/mandates/mnd_${'x'.repeat(1_000)}${i}`);
      });
    } finally {
      amqpProxy.restore();
      brokerBackAt = Date.now();
    }
    const recoveryMs = await wholeAgain(auth, brokerBackAt, 'the broker cut');

    const counts = await stored(tenantId, seen);
    report('broker cut until both 1 MB spools were full', counts, {
      statuses: Object.fromEntries(seen.statuses),
      unavailable: Object.fromEntries(seen.unavailable),
      whole_ms_after_broker_back: recoveryMs,
    });
    // Both spools filled: verify refused decisions, the gateway calls, each with 503 and Retry-After.
    expect([verifyFull(), gatewayFull()]).toEqual([true, true]);
    expectNothingLostOrDoubled(counts, seen);
    expect(recoveryMs).toBeLessThanOrEqual(WHOLE_WITHIN_MS);
  }, 240_000);
});
