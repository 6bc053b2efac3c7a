import { MONGO_TARGET } from '@mandate/shared/testing';
import { DEFAULT_IDEMPOTENCY_SETTINGS } from '@mandate/gateway/testing';
import { mongoStackEnv, type MongoStackEnv } from '../support/mongo-standin';
import { createTenant, eventually, startStack, type ServiceProcess, type Stack } from '../support/stack';
import {
  expectStoredOnce,
  restart,
  sigkill,
  waitFor,
  noLimits,
  wholeAgain,
  WHOLE_WITHIN_MS,
} from './producers';
import { mandateBody, post, runLoad, serverErrors, type Call } from './calls';
import { Produced, storedEvents as storedEventsOf, type CountedType } from './workload';

/**
 * Process faults of docs/TESTING.md, "Fault matrix": identity killed with SIGKILL under load, the
 * gateway killed mid-request while clients retry under their Idempotency-Key, and SIGTERM under
 * load (the drain of docs/KUBERNETES.md, "What each component needs": what was taken is answered). The five services run
 * as processes on the real RabbitMQ and Redis, identity and mandates on their Mongo adapters so a
 * restarted process finds its tenants, keys and mandates; two verify replicas. Every answer the
 * clients read is recorded with when it was sent and when it ended.
 */
const NO_LIMITS = noLimits('mandates.create');
const TYPES: CountedType[] = ['MANDATE_CREATED', 'VERIFICATION_PERFORMED', 'API_CALL'];

describe(`process faults under load: SIGKILL, SIGKILL mid-request with Idempotency-Key, SIGTERM (five processes, ${MONGO_TARGET})`, () => {
  let databases: MongoStackEnv;
  let stack: Stack;
  /** The processes now serving in place of the stack's (a restarted one replaces the killed one). */
  const current = new Map<string, ServiceProcess>();
  const restarted: ServiceProcess[] = [];

  beforeAll(async () => {
    databases = mongoStackEnv('signals');
    stack = await startStack(
      {
        identity: databases.env.identity,
        mandates: databases.env.mandates,
        gateway: { PLAN_OVERRIDES: NO_LIMITS },
      },
      { replicas: { verify: 2 } },
    );
    for (const p of [stack.gateway, ...Object.values(stack.replicas).flat()]) current.set(p.name, p);
  }, 240_000);

  afterAll(async () => {
    // The gateway first (no new work), then the rest.
    for (const p of restarted.reverse()) await p.stop();
    await stack?.stop();
    await databases?.drop();
  }, 90_000);

  /** Replaces the process named `name` by a new one with its environment (its port too), once healthy. */
  async function replace(name: string): Promise<{ proc: ServiceProcess; readyAt: number }> {
    const old = current.get(name)!;
    const proc = await restart(old.service!, old);
    restarted.push(proc);
    current.set(name, proc);
    return { proc, readyAt: Date.now() };
  }

  const audit = () => ({ url: stack.services.audit.url, internalSecret: stack.internalSecret });

  it('when identity is killed with SIGKILL under load and restarted, then requests answer 503 with Retry-After (never 500, never hang) while it is down, the stack serves again within 10 s of identity being ready, and every event answered 2xx is stored once', async () => {
    const created = await createTenant(stack, { name: 'identity-kill', plan: 'enterprise' });
    const produced = new Produced();
    const calls: Call[] = [];
    let stopping = false;
    const load = runLoad(stack.gateway.url, created.auth, 'idk', produced, calls, () => stopping);
    await waitFor(() => produced.done >= 10, 'the first 10 mandates');

    const killedAt = Date.now();
    await sigkill(current.get('identity')!);
    // The outage's length is the scenario: past the gateway's key cache (KEY_CACHE_TTL_MS, 0.5 s),
    // so every request needs identity again while it is down.
    await new Promise((r) => setTimeout(r, 3_000));
    const { readyAt } = await replace('identity');
    // Recovered: a create sent after identity was ready has answered 201.
    const recovered = await waitFor(
      () => calls.some((c) => c.sentAt >= readyAt && c.path === '/v1/mandates' && c.status === 201),
      'a create answered 201 after identity restarted',
      60_000,
    ).then(() =>
      Math.min(...calls.filter((c) => c.sentAt >= readyAt && c.status === 201).map((c) => c.endedAt)),
    );
    const recoveryMs = recovered - readyAt;
    const doneAtRecovery = produced.done;
    await waitFor(() => produced.done >= doneAtRecovery + 10, '10 more mandates after the restart');
    stopping = true;
    await load;

    const down = calls.filter((c) => c.sentAt >= killedAt + 1_000 && c.sentAt < readyAt);
    const downStatuses = [...new Set(down.map((c) => c.status ?? c.error))];
    process.stdout.write(
      `[fault] identity SIGKILL: statuses while down ${JSON.stringify(downStatuses)}, 503 messages ${JSON.stringify([...new Set(down.map((c) => c.message))])}\n`,
    );
    await expectStoredOnce(
      audit(),
      { tenantId: created.tenant.id, produced, count: produced.done },
      TYPES,
      'identity SIGKILL under load + restart',
      {
        outage_ms: readyAt - killedAt,
        recovery_ms_after_identity_ready: recoveryMs,
        calls_during_outage: down.length,
      },
    );
    // While identity was down, requests failed (the fault bit) and each failure was a 503 with
    // Retry-After (docs/API.md, "Retries"): never a 500, never an answer the client waited out.
    expect(down.filter((c) => c.status === 503).length).toBeGreaterThan(0);
    expect(calls.filter((c) => c.error !== undefined).map((c) => `${c.rid}: ${c.error}`)).toEqual([]);
    expect(serverErrors(calls).filter((e) => e.status !== 503 || !e.retryAfter)).toEqual([]);
    // Whole again within the bound of docs/TESTING.md, "Fault matrix", counted from identity's readiness.
    expect(recoveryMs).toBeLessThanOrEqual(WHOLE_WITHIN_MS);
    // Nothing failed once recovered.
    expect(calls.filter((c) => c.sentAt >= recovered && (c.status ?? 0) >= 500)).toEqual([]);
  }, 180_000);
  /** The tenant's stored events of `type`, read from audit directly (no API_CALL added). */
  const storedEvents = (tenantId: string, type: CountedType) =>
    storedEventsOf(stack.services.audit.url, stack.internalSecret, tenantId, type);

  /** Every mandate of the tenant, read through the gateway (every page). */
  async function listMandates(gatewayUrl: string, auth: string) {
    const all: { id: string; principal: { id: string } }[] = [];
    let cursor: string | undefined;
    do {
      const qs = new URLSearchParams({ limit: '100', ...(cursor ? { cursor } : {}) });
      const res = await fetch(`${gatewayUrl}/v1/mandates?${qs}`, {
        headers: { authorization: `Bearer ${auth}` },
      });
      expect(res.status).toBe(200);
      const page = (await res.json()) as { data: typeof all; next_cursor: string | null; has_more: boolean };
      all.push(...page.data);
      cursor = page.has_more && page.next_cursor ? page.next_cursor : undefined;
    } while (cursor);
    return all;
  }

  it('when the gateway is killed with SIGKILL while creates carrying an Idempotency-Key are in flight, and each is retried under its key after the restart, then every key has exactly one mandate and one MANDATE_CREATED, and a create answered before the kill is replayed as it was answered', async () => {
    const created = await createTenant(stack, { name: 'gateway-kill-idempotency', plan: 'enterprise' });
    const COUNT = 40;
    const label = 'gwk';
    const calls: Call[] = [];
    const first = new Map<number, Call>();
    const gateway = current.get('gateway')!;
    const keyOf = (i: number) => ({ 'idempotency-key': `${label}-key-${i}` });
    let killedAt = 0;
    let next = 0;
    // 20 at a time; the gateway is killed the moment the 10th create was answered, with the others in flight.
    const worker = async () => {
      for (let i = next++; i < COUNT; i = next++) {
        const call = await post(
          gateway.url,
          created.auth,
          '/v1/mandates',
          `${label}-c-${i}`,
          mandateBody(i, label),
          calls,
          keyOf(i),
        );
        first.set(i, call);
        if (killedAt === 0 && [...first.values()].filter((c) => c.status === 201).length >= 10) {
          killedAt = Date.now();
          gateway.child.kill('SIGKILL');
        }
      }
    };
    await Promise.all(Array.from({ length: 20 }, worker));
    await gateway.exited;
    const { proc, readyAt } = await replace('gateway');

    // Each create again under its key and with its body, as docs/API.md, "Retries" says, until it is
    // answered for good: past a 503, a refused connection, and the 409 of a first attempt whose lock
    // the killed gateway still holds (its lease lapses within 6 s, docs/DECISIONS.md#idempotency).
    const retried = new Map<number, Call>();
    let firstAnsweredMs = -1;
    let inProgress = 0;
    await Promise.all(
      Array.from({ length: COUNT }, async (_, i) => {
        for (let attempt = 1; ; attempt++) {
          const call = await post(
            proc.url,
            created.auth,
            '/v1/mandates',
            `${label}-c-${i}-r${attempt}`,
            mandateBody(i, label),
            calls,
            keyOf(i),
          );
          if (call.status === 409) inProgress++;
          const again = call.error !== undefined || (call.status ?? 0) >= 500 || call.status === 409;
          if (!again && firstAnsweredMs < 0) firstAnsweredMs = Date.now() - readyAt;
          if (!again || Date.now() - readyAt > 120_000) return void retried.set(i, call);
          // A back-off between retries, as a client's: the lock's lapse is what it waits for.
          await new Promise((r) => setTimeout(r, 1_000));
        }
      }),
    );
    const settledMs = Date.now() - readyAt;
    const answered = [...first].filter(([, c]) => c.status === 201).map(([i]) => i);
    const unanswered = [...first].filter(([, c]) => c.status === undefined).map(([i]) => i);
    const mandates = await listMandates(proc.url, created.auth);
    const perPrincipal = new Map<string, string[]>();
    for (const m of mandates)
      perPrincipal.set(m.principal.id, [...(perPrincipal.get(m.principal.id) ?? []), m.id]);
    const events = await eventually(
      async () => {
        const found = await storedEvents(created.tenant.id, 'MANDATE_CREATED');
        return found.length >= COUNT ? found : undefined;
      },
      30_000,
      `${COUNT} MANDATE_CREATED`,
      500,
    );
    process.stdout.write(
      `[fault] gateway SIGKILL mid-request, retried under Idempotency-Key ${JSON.stringify({
        answered_before_kill: answered.length,
        unanswered: unanswered.length,
        other_first_answers: COUNT - answered.length - unanswered.length,
        restart_ms: readyAt - killedAt,
        retries_answered_409_in_progress: inProgress,
        first_retry_answered_ms_after_restart: firstAnsweredMs,
        all_retries_answered_ms_after_restart: settledMs,
        mandates: mandates.length,
      })}\n`,
    );
    // The kill landed mid-request: some creates were never answered.
    expect(unanswered.length).toBeGreaterThan(0);
    // Whole within 10 s of the restart: a retry answered; and none waits out the dead gateway's
    // locks any longer than their 6 s lease (docs/DECISIONS.md#idempotency) on top of the bound, the
    // time 40 concurrent retries take on a loaded machine.
    expect(firstAnsweredMs).toBeGreaterThanOrEqual(0);
    expect(firstAnsweredMs).toBeLessThanOrEqual(WHOLE_WITHIN_MS);
    expect(settledMs).toBeLessThanOrEqual(DEFAULT_IDEMPOTENCY_SETTINGS.leaseMs + WHOLE_WITHIN_MS);
    // Every retry was answered 201 with one mandate per key: no key left with none, none with two.
    expect([...retried.values()].map((c) => c.status)).toEqual(Array(COUNT).fill(201));
    const ids = Array.from({ length: COUNT }, (_, i) => perPrincipal.get(`user_${label}_${i}`) ?? []);
    expect(ids.filter((list) => list.length !== 1)).toEqual([]);
    expect(mandates.length).toBe(COUNT);
    // Each retry answered the key's one mandate; an answered create is replayed as it was answered.
    expect(Array.from({ length: COUNT }, (_, i) => retried.get(i)!.body?.id)).toEqual(
      ids.map((list) => list[0]),
    );
    for (const i of answered) {
      expect({ i, replayed: retried.get(i)!.replayed, body: retried.get(i)!.body }).toEqual({
        i,
        replayed: true,
        body: first.get(i)!.body,
      });
    }
    // Created once, recorded once: one MANDATE_CREATED per mandate, none for a retry.
    expect(events.map((e) => e.resource?.id).sort()).toEqual(mandates.map((m) => m.id).sort());
  }, 240_000);

  it('when a verify replica, then mandates, then the gateway get SIGTERM under load (the last two started again), then every request sent before the signal is answered and none with a 5xx, no stored create went unanswered, any later 5xx is a 503 with Retry-After, and every event answered 2xx is stored once', async () => {
    const created = await createTenant(stack, { name: 'sigterm-drain', plan: 'enterprise' });
    const probeTenant = await createTenant(stack, { name: 'sigterm-drain probe', plan: 'enterprise' });
    const probe = { tenantId: probeTenant.tenant.id, auth: probeTenant.auth };
    const produced = new Produced();
    const calls: Call[] = [];
    let stopping = false;
    const load = runLoad(current.get('gateway')!.url, created.auth, 'term', produced, calls, () => stopping);
    await waitFor(() => produced.done >= 10, 'the first 10 mandates');
    const signals: {
      name: string;
      at: number;
      code: number | null;
      inFlight: Call[];
      restartMs: number;
      wholeMs: number;
    }[] = [];
    // A verify replica stops for good (its twin serves on); mandates, a single process, and the
    // gateway are started again on their ports, as a rollout replaces a pod.
    for (const name of [stack.replicas.verify[0]!.name, 'mandates', 'gateway']) {
      const proc = current.get(name)!;
      const at = Date.now();
      // 30 s, as terminationGracePeriodSeconds gives it (docs/KUBERNETES.md, "What each component needs"): SIGKILL only after.
      const code = await proc.stop('SIGTERM', 30_000);
      const readyAt = name === 'mandates' || name === 'gateway' ? (await replace(name)).readyAt : Date.now();
      // Whole within 10 s of the process being back (or, for the replica not replaced, of its exit).
      const gatewayUrl = current.get('gateway')!.url;
      const wholeMs = (await wholeAgain(gatewayUrl, audit(), probe, readyAt, `term-${name}`)).storedMs;
      signals.push({ name, at, code, inFlight: [], restartMs: readyAt - at, wholeMs });
      const done = produced.done;
      await waitFor(() => produced.done >= done + 5, `5 mandates after ${name} got SIGTERM`);
    }
    stopping = true;
    await load;
    for (const s of signals) s.inFlight = calls.filter((c) => c.sentAt < s.at && c.endedAt > s.at);

    const createdEvents = await eventually(
      async () => {
        const found = await storedEvents(created.tenant.id, 'MANDATE_CREATED');
        return found.length >= produced.byType.MANDATE_CREATED.size ? found : undefined;
      },
      30_000,
      'every MANDATE_CREATED',
      500,
    );
    await expectStoredOnce(
      audit(),
      { tenantId: created.tenant.id, produced, count: produced.done },
      TYPES,
      'SIGTERM under load: a verify replica (not restarted), mandates and the gateway (restarted)',
      {
        ...Object.fromEntries(signals.map((s) => [`${s.name}_in_flight_at_sigterm`, s.inFlight.length])),
        ...Object.fromEntries(signals.map((s) => [`${s.name}_back_ms`, s.restartMs])),
        ...Object.fromEntries(signals.map((s) => [`${s.name}_whole_ms_after_back`, s.wholeMs])),
      },
    );
    expect(signals.filter((s) => s.wholeMs > WHOLE_WITHIN_MS).map((s) => [s.name, s.wholeMs])).toEqual([]);
    // Each stopped by itself, cleanly, within the grace: the drain ended, nobody had to SIGKILL it.
    expect(signals.map((s) => [s.name, s.code])).toEqual(signals.map((s) => [s.name, 0]));
    // What was in flight when the signal came was answered: no reset, no timeout. A request the
    // gateway took is answered, and not with a server error (it has drained, not cut them).
    const failedInFlight = signals.flatMap((s) =>
      s.inFlight
        .filter((c) => c.status === undefined || (s.name === 'gateway' && c.status >= 500))
        .map((c) => `${s.name}: ${c.rid} ${c.status ?? c.error} ${c.message ?? ''}`),
    );
    expect(failedInFlight).toEqual([]);
    // A verify replica going away costs nothing: until mandates got its signal, no verify failed,
    // the gateway sent each to the replica left (docs/DEPLOYMENT.md, "Consistency and expiry").
    const verifyFailed = calls.filter(
      (c) =>
        c.path === '/v1/verify' &&
        c.endedAt > signals[0]!.at &&
        c.sentAt < signals[1]!.at &&
        (c.status ?? 0) >= 500,
    );
    expect(verifyFailed.map((c) => `${c.rid} ${c.status} ${c.message ?? ''}`)).toEqual([]);
    // No create or verification was done without its answer reaching the client (a drain that cut
    // a request off): a service that took a request answered it.
    const verifications = await storedEvents(created.tenant.id, 'VERIFICATION_PERFORMED');
    const doneUnanswered = [
      ...createdEvents.filter((e) => !produced.byType.MANDATE_CREATED.has(e.request_id ?? '')),
      ...verifications.filter((e) => !produced.byType.VERIFICATION_PERFORMED.has(e.request_id ?? '')),
    ].map((e) => e.request_id);
    expect(doneUnanswered).toEqual([]);
    // Later requests may find a service gone (the single mandates process while it restarts): a 503
    // with Retry-After (docs/API.md, "Retries"), never another 5xx.
    expect(serverErrors(calls).filter((e) => e.status !== 503 || !e.retryAfter)).toEqual([]);
  }, 240_000);
});
