import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  AMQP_URL,
  REDIS_URL,
  apiClient,
  createTenant,
  startService,
  startStack,
  verifyCounters,
  type ServiceProcess,
  type Stack,
} from '../support/stack';
import { MONGO_TARGET } from '@mandate/shared/testing';
import { mongoStackEnv, type MongoStackEnv } from '../support/mongo-standin';
import { inflateSync } from 'node:zlib';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';
import { Produced, countEvents, createAndVerify, report, settle, type Counts } from './workload';
import { noLimits, wholeAgain, withPort, WHOLE_WITHIN_MS, type Whole } from './producers';

/**
 * Delivery guarantees under faults (docs/DEPLOYMENT.md, "Delivery guarantees"): the five services as
 * processes on the real RabbitMQ and Redis, every connection to them through a TCP proxy this
 * test cuts. Each scenario counts, per event type, what the clients saw succeed (produced),
 * what GET /v1/events holds (stored) and how many are doubled (duplicates), and prints them.
 */
const NO_LIMITS = noLimits('mandates.create');

async function waitFor(check: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.each([
  { stores: 'in-memory stores, audit journaled to a file', mongo: false },
  { stores: `Mongo adapters on ${MONGO_TARGET}`, mongo: true },
])('delivery guarantees under faults (real RabbitMQ and Redis through a TCP proxy), $stores', ({ mongo }) => {
  let databases: MongoStackEnv | undefined;
  let amqpProxy: TcpProxy;
  let redisProxy: TcpProxy;
  let stack: Stack;
  let auditEnv: Record<string, string>;
  let journalDir: string;
  let restartedAudit: ServiceProcess | undefined;
  let auditUrl: string;

  beforeAll(async () => {
    const amqp = new URL(AMQP_URL);
    const redis = new URL(REDIS_URL);
    amqpProxy = await startTcpProxy(amqp.hostname, Number(amqp.port || 5672));
    redisProxy = await startTcpProxy(redis.hostname, Number(redis.port || 6379));
    journalDir = await mkdtemp(path.join(tmpdir(), 'fault-audit-'));
    const proxied = {
      AMQP_URL: withPort(AMQP_URL, amqpProxy.port),
      REDIS_URL: withPort(REDIS_URL, redisProxy.port),
    };
    // The audit store must outlive a SIGKILL: its Mongo database does, else the journaled memory store.
    databases = mongo ? mongoStackEnv('faults') : undefined;
    const auditExtra = databases?.env.audit ?? { AUDIT_STORE_FILE: path.join(journalDir, 'events.ndjson') };
    stack = await startStack({
      all: proxied,
      audit: auditExtra,
      mandates: databases?.env.mandates ?? {},
      identity: databases?.env.identity ?? {},
      // The same for the gateway's hops: once the cut ends, audit stores the whole backlog (with its
      // log nodes) on the one stand-in the run shares, and a create queued behind it on a loaded
      // machine has taken over the default 10 s (one 503 in CI).
      gateway: { PLAN_OVERRIDES: NO_LIMITS, UPSTREAM_TIMEOUT_MS: '30000' },
      // While Redis is cut every verify reads its mandate from the mandates service, which on the
      // MongoDB stand-in of a loaded 2-core machine can take seconds: this suite is about flow and
      // loss, not latency, so a slow read must not turn into a 503.
      verify: { MANDATES_TIMEOUT_MS: '10000' },
    });
    auditUrl = stack.services.audit.url;
    auditEnv = {
      INTERNAL_TOKEN_SECRET: stack.internalSecret,
      AMQP_NAMESPACE: stack.namespace,
      MANDATES_URL: stack.services.mandates.url,
      PORT: new URL(auditUrl).port,
      ...proxied,
      ...auditExtra,
    };
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await restartedAudit?.stop();
    await amqpProxy?.close();
    await redisProxy?.close();
    await rm(journalDir, { recursive: true, force: true });
    await databases?.drop();
  }, 60_000);

  async function newTenant(name: string): Promise<{ tenantId: string; auth: string }> {
    const created = await createTenant(stack, { name, plan: 'enterprise' });
    return { tenantId: created.tenant.id, auth: created.auth };
  }

  /**
   * A fresh tenant creating and verifying `count` mandates, 20 at a time, in the background
   * (request ids `label-…`); answers once the first `firstDone` are done, so the fault lands mid-stream.
   */
  async function loadUnderWay(tenantName: string, label: string, count: number, firstDone: number) {
    const { tenantId, auth } = await newTenant(tenantName);
    const produced = new Produced();
    const load = createAndVerify(stack.gateway.url, auth, { count, concurrency: 20, label, produced });
    await waitFor(() => produced.done >= firstDone, `the first ${firstDone} mandates`);
    return { tenantId, produced, load, count };
  }

  /**
   * Whole again after a fault of `outageMs` that ended at `since` (docs/TESTING.md, "Fault
   * matrix"): a fresh tenant's create and verify answered within 10 s, beside the load still
   * running, and their events stored behind the backlog within the outage's length plus 10 s
   * (docs/DECISIONS.md#recovery); 0 for a fault the events never waited on.
   */
  async function expectWholeSince(since: number, outageMs: number, label: string): Promise<Whole> {
    const probe = await newTenant(`${label} probe`);
    const whole = await wholeAgain(
      stack.gateway.url,
      { url: auditUrl, internalSecret: stack.internalSecret },
      probe,
      since,
      label,
    );
    expect(whole.answeredMs).toBeLessThanOrEqual(WHOLE_WITHIN_MS);
    expect(whole.storedMs).toBeLessThanOrEqual(outageMs + WHOLE_WITHIN_MS);
    return whole;
  }

  /** Cuts `proxy` for `ms`, then restores it; answers how many mandates were done meanwhile. */
  async function doneWhileCut(proxy: TcpProxy, ms: number, produced: Produced): Promise<number> {
    proxy.cut();
    const doneAtCut = produced.done;
    await new Promise((r) => setTimeout(r, ms));
    const doneDuringCut = produced.done - doneAtCut;
    proxy.restore();
    return doneDuringCut;
  }

  /** What audit stored of the tenant's events, once the counts stop changing (at most 90 s). */
  const delivered = (tenantId: string, produced: Produced) =>
    settle(() => countEvents(auditUrl, stack.internalSecret, tenantId, produced), 90_000);

  /** The services' warnings and errors, printed when a request got a 5xx: what the answer alone cannot say. */
  function printServiceTrouble(produced: Produced): void {
    if (produced.serverErrors.length === 0) return;
    const lines = Object.values(stack.replicas)
      .flat()
      .concat(stack.gateway)
      .flatMap((p) =>
        p.output
          .join('')
          .split('\n')
          .filter((l) => /"level":(40|50|60)/.test(l))
          .map((l) => `${p.name}: ${l}`),
      );
    console.log(`services' warnings and errors (last 80):\n${lines.slice(-80).join('\n')}`);
  }

  function expectAllDelivered(counts: Counts[], produced: Produced, mandates: number) {
    printServiceTrouble(produced);
    expect(produced.clientErrors).toEqual([]);
    expect(produced.serverErrors).toEqual([]);
    // The API kept answering: every create 201, every verify 200.
    expect([...produced.statuses.keys()].sort()).toEqual([200, 201]);
    expect(produced.byType.MANDATE_CREATED.size).toBe(mandates);
    expect(produced.byType.VERIFICATION_PERFORMED.size).toBe(mandates);
    for (const c of counts)
      expect({ type: c.type, stored: c.stored, duplicates: c.duplicates }).toEqual({
        type: c.type,
        stored: c.produced,
        duplicates: 0,
      });
  }

  /**
   * Every scenario ends alike: the rest of the load runs, what audit stored of it is printed under
   * `title` with the scenario's own numbers (`extra`, read once the counts settled), and every
   * event the clients saw succeed must be stored exactly once.
   */
  async function expectLoadDelivered(
    run: Awaited<ReturnType<typeof loadUnderWay>>,
    title: string,
    extra: () => Record<string, number>,
  ): Promise<void> {
    await run.load;
    const counts = await delivered(run.tenantId, run.produced);
    report(title, counts, extra());
    expectAllDelivered(counts, run.produced, run.count);
  }

  it('when the broker is cut for 10 s while 1,000 mandates are created and verified, then every MANDATE_CREATED, VERIFICATION_PERFORMED and API_CALL arrives in /events, none twice', async () => {
    const started = Date.now();
    const run = await loadUnderWay('broker-cut', 'cut', 1_000, 100);
    const doneDuringCut = await doneWhileCut(amqpProxy, 10_000, run.produced);
    const whole = await expectWholeSince(Date.now(), 10_000, 'broker-cut');
    await run.load;
    const loadMs = Date.now() - started;
    await expectLoadDelivered(run, 'broker cut 10 s, 1,000 mandates created + verified', () => ({
      mandates_done_during_cut: doneDuringCut,
      answered_ms_after_cut: whole.answeredMs,
      stored_ms_after_cut: whole.storedMs,
      load_ms: loadMs,
      delivered_ms_after_load: Date.now() - started - loadMs,
    }));
    // The cut happened mid-stream: requests were answered while the broker was away.
    expect(doneDuringCut).toBeGreaterThan(0);
  }, 240_000);

  it('when the audit process is killed with SIGKILL mid-stream and restarted, then the same count arrives, no duplicates', async () => {
    const run = await loadUnderWay('audit-kill', 'kill', 400, 100);
    const killed = stack.services.audit.child;
    const killedAt = Date.now();
    killed.kill('SIGKILL');
    await new Promise<void>((resolve) =>
      killed.exitCode !== null || killed.signalCode !== null
        ? resolve()
        : killed.once('exit', () => resolve()),
    );
    const doneAtKill = run.produced.done;
    // The outage's length is the scenario: audit stays down for 2 s while the load goes on.
    await new Promise((r) => setTimeout(r, 2_000));
    restartedAudit = await startService('audit', auditEnv, 'audit (restarted)');
    const whole = await expectWholeSince(Date.now(), Date.now() - killedAt, 'audit-kill');
    await expectLoadDelivered(
      run,
      'audit SIGKILL mid-stream + restart, 400 mandates created + verified',
      () => ({
        mandates_done_at_kill: doneAtKill,
        answered_ms_after_restart: whole.answeredMs,
        stored_ms_after_restart: whole.storedMs,
      }),
    );
    expect(doneAtKill).toBeLessThan(400);
  }, 240_000);

  it('when the broker is cut while mandates are suspended, revoked and expire, then every change reaches their status list within ttl, and after the cut too', async () => {
    const { auth } = await newTenant('status-list-cut');
    const api = apiClient(stack.gateway.url);
    const created: { id: string; status: { status_list: { idx: number; uri: string } } }[] = [];
    // Four to suspend, four to revoke, two left alone, and two that expire during the cut (the
    // sweeper persists EXPIRED while the broker is away; the list must show it all the same).
    // Each expiry counted from its own create: on a loaded machine the loop can take longer than 8 s,
    // and one computed before it was in the past by then (a 400 in CI).
    const expiresAt = () => new Date(Date.now() + 8_000).toISOString();
    for (let i = 0; i < 14; i++) {
      const res = await api('POST', '/v1/mandates', {
        auth,
        body: { principal: `p${i}`, delegate: `d${i}`, ...(i >= 12 ? { expires_at: expiresAt() } : {}) },
      });
      expect(res.status).toBe(201);
      created.push(res.body);
    }
    /** Each mandate's value in its freshly fetched list, decoded with node:zlib (the draft's bit order). */
    const statuses = async () => {
      const values: number[] = [];
      for (const m of created) {
        const res = await fetch(`${stack.gateway.url}${new URL(m.status.status_list.uri).pathname}`);
        expect(res.status).toBe(200);
        const claims = JSON.parse(Buffer.from((await res.text()).split('.')[1]!, 'base64url').toString());
        const bytes = inflateSync(Buffer.from(claims.status_list.lst, 'base64url'));
        const idx = m.status.status_list.idx;
        values.push((bytes[idx >> 2]! >> ((idx & 3) * 2)) & 3);
      }
      return values;
    };
    const expected = created.map((_, i) => (i < 4 ? 2 : i < 8 || i >= 12 ? 1 : 0));
    const ttlMs = 60_000;
    amqpProxy.cut();
    const cutAt = Date.now();
    try {
      for (const [i, m] of created.entries()) {
        if (i >= 8) continue;
        const res = await api('POST', `/v1/mandates/${m.id}/${i < 4 ? 'suspend' : 'revoke'}`, {
          auth,
          body: {},
        });
        expect(res.status).toBe(200);
      }
      const changedAt = Date.now();
      // While the broker is still away: the list is derived from the mandates themselves.
      let seen: number[] = [];
      while ((seen = await statuses()).join() !== expected.join() && Date.now() - changedAt < ttlMs) {
        await new Promise((r) => setTimeout(r, 250));
      }
      expect(seen).toEqual(expected);
    } finally {
      amqpProxy.restore();
    }
    const whole = await expectWholeSince(Date.now(), Date.now() - cutAt, 'status-list-cut');
    process.stdout.write(
      `[fault] broker cut during lifecycle changes: whole ${JSON.stringify(whole)} after the cut\n`,
    );
    expect(await statuses()).toEqual(expected);
  }, 180_000);

  /** The gateway's rate_limit_redis_fallbacks_total and verify's snapshot counters, now. */
  async function fallbackCounters() {
    const res = await fetch(`${stack.gateway.url}/metrics`, {
      headers: { authorization: `Bearer ${stack.operatorToken}` },
    });
    expect(res.status).toBe(200);
    const line = /^rate_limit_redis_fallbacks_total(?:\{[^}]*\})? (\S+)$/m.exec(await res.text());
    const verify = await verifyCounters(
      stack.internalSecret,
      stack.services.verify.url,
      'fault-test-counters',
    );
    return {
      limiterFallbacks: Number(line?.[1] ?? 0),
      snapshotErrors: verify.snapshot_errors!,
      mandatesReads: verify.mandates_reads!,
    };
  }

  it('when Redis is cut, then requests keep flowing (insurance limiter, snapshot fallback, both counted) and nothing is lost', async () => {
    const run = await loadUnderWay('redis-cut', 'redis', 400, 50);
    const before = await fallbackCounters();
    const doneDuringCut = await doneWhileCut(redisProxy, 5_000, run.produced);
    const after = await fallbackCounters();
    // Redis is not on the events' path: they are held to the 10 s alone.
    const whole = await expectWholeSince(Date.now(), 0, 'redis-cut');
    await expectLoadDelivered(run, 'Redis cut 5 s, 400 mandates created + verified', () => ({
      mandates_done_during_cut: doneDuringCut,
      answered_ms_after_cut: whole.answeredMs,
      stored_ms_after_cut: whole.storedMs,
      limiter_fallbacks: after.limiterFallbacks - before.limiterFallbacks,
      snapshot_read_throughs: after.snapshotErrors - before.snapshotErrors,
    }));
    expect(doneDuringCut).toBeGreaterThan(0);
    // The fallbacks the README names were what kept them flowing: the gateway limited in process,
    // and verify read the mandates it could not take from Redis from the mandates service.
    expect(after.limiterFallbacks).toBeGreaterThan(before.limiterFallbacks);
    expect(after.snapshotErrors).toBeGreaterThan(before.snapshotErrors);
    expect(after.mandatesReads - before.mandatesReads).toBeGreaterThanOrEqual(
      after.snapshotErrors - before.snapshotErrors,
    );
  }, 240_000);
});
