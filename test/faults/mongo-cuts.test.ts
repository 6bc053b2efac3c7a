import { internalTokens } from '@mandate/shared/core';
import { MONGO_TARGET } from '@mandate/shared/testing';
import {
  MONGO_SERVICES,
  mongoStackEnv,
  type MongoService,
  type MongoStackEnv,
} from '../support/mongo-standin';
import { apiClient, createTenant, startStack, type Stack } from '../support/stack';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';
import {
  CLIENT_TIMEOUT_MS,
  audited,
  mandateBody,
  runLoad,
  send,
  serverErrors,
  stepUntil,
  type Call,
} from './calls';
import { expectStoredOnce, waitFor, withPort, noLimits, WHOLE_WITHIN_MS } from './producers';
import { Produced, type CountedType } from './workload';

/**
 * The MongoDB rows of docs/TESTING.md, "Fault matrix": the connection of mandates, identity and
 * audit to MongoDB cut under load, for 6 s and for 60 s. The five services run as processes on the
 * real RabbitMQ and Redis; each of the three reaches the MongoDB stand-in through a TCP proxy of its
 * own, which the test cuts (`tcp-proxy.ts` `cut()`: connections destroyed, new ones refused).
 *
 * The load goes through the gateway: mandates created and verified (mandates writes, identity's key
 * checks), API keys created (identity writes) and the tenant's events read (audit reads), each
 * failed step retried under a new request id. Each row asserts: every failure during the cut a 503
 * with Retry-After (never a 500, nothing unanswered); every event of a 2xx stored once, the events
 * that reached the broker while audit could not store them included (RabbitMQ holds them until
 * audit acks, docs/DEPLOYMENT.md, "Delivery guarantees"); /livez 200 all along; and the whole stack
 * serving again within 10 s of the cut's end (asserted, the time printed).
 *
 * Identity is cut alone: while it cannot read keys the gateway refuses every request (503, Identity
 * service unavailable), so no request would reach mandates. Mandates and audit share the 60 s window.
 */

/**
 * LIVENESS_FAIL_AFTER_MS of the three (docs/DEPLOYMENT.md, "Liveness"): /livez stays 200 through a
 * 60 s cut only with a bound above it, the cut and the recovery after it; the default (60 s) would
 * fail /livez at the cut's end, and a supervisor would restart a process that was about to recover.
 */
const LIVENESS_FAIL_AFTER_MS = 90_000;

const NO_LIMITS = noLimits('mandates.create', 'apikeys.create');

const TYPES: CountedType[] = ['MANDATE_CREATED', 'VERIFICATION_PERFORMED', 'API_KEY_CREATED', 'API_CALL'];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * One look at a cut service, as its supervisor and its callers see it: its /livez (status, bound,
 * whether a check said down) and a read of its own API under an internal token (status, Retry-After).
 */
interface Sample {
  service: MongoService;
  livez: number | string;
  failAfterMs?: number;
  down: boolean;
  read: number | string;
  retryAfter: string | null;
}

/** What each service's read needs: its audience, the token's permissions, the route. */
const READS: Record<MongoService, { permissions: string[]; method: 'GET' | 'POST'; path: string }> = {
  mandates: { permissions: ['mandates:read'], method: 'GET', path: '/v1/mandates?limit=1' },
  // The gateway's key check (docs/DECISIONS.md, "Credential changes").
  identity: { permissions: [], method: 'POST', path: '/internal/v1/keys/resolve' },
  audit: { permissions: ['events:read'], method: 'GET', path: '/v1/events?limit=1' },
};

describe(`MongoDB cut 6 s and 60 s under load: identity, audit, mandates (five processes, each through its own proxy to ${MONGO_TARGET})`, () => {
  let databases: MongoStackEnv;
  const proxies = {} as Record<MongoService, TcpProxy>;
  let stack: Stack;

  beforeAll(async () => {
    databases = mongoStackEnv('mongo-cuts');
    const env = {} as Record<MongoService, Record<string, string>>;
    for (const service of MONGO_SERVICES) {
      const mongo = new URL(databases.env[service].MONGO_URL!);
      proxies[service] = await startTcpProxy(mongo.hostname, Number(mongo.port || 27017));
      env[service] = {
        ...databases.env[service],
        MONGO_URL: withPort(mongo.toString(), proxies[service].port),
        LIVENESS_FAIL_AFTER_MS: String(LIVENESS_FAIL_AFTER_MS),
      };
    }
    stack = await startStack({ ...env, gateway: { PLAN_OVERRIDES: NO_LIMITS } });
  }, 240_000);

  afterAll(async () => {
    await stack?.stop();
    await Promise.all(Object.values(proxies).map((p) => p.close()));
    await databases?.drop();
  }, 60_000);

  /**
   * Every second, each service's /livez (its checks bounded at 5 s, LIVENESS_CHECK_TIMEOUT_MS, so it
   * answers while MongoDB is away) and a read of its own API, until `stop()`.
   */
  function watch(services: MongoService[], tenant: { id: string; apiKey: string }, stop: () => boolean) {
    const tokens = internalTokens(stack.internalSecret);
    const samples: Sample[] = [];
    const done = Promise.all(
      services.map(async (service) => {
        const read = READS[service];
        for (let i = 0; !stop(); i++) {
          const sample: Sample = {
            service,
            livez: 'no answer',
            down: false,
            read: 'no answer',
            retryAfter: null,
          };
          try {
            const res = await fetch(`${stack.services[service].url}/livez`, {
              signal: AbortSignal.timeout(8_000),
            });
            const body = (await res.json()) as { fail_after_ms: number; checks: Record<string, string> };
            sample.livez = res.status;
            sample.failAfterMs = body.fail_after_ms;
            sample.down = Object.values(body.checks).some((v) => v.includes('down for'));
          } catch (err) {
            sample.livez = `no answer: ${String(err)}`;
          }
          try {
            const requestId = `watch-${service}-${i}`;
            const token = await tokens.mint(
              {
                tenantId: service === 'identity' ? null : tenant.id,
                actor: { type: 'system' },
                permissions: read.permissions,
                requestId,
              },
              service,
            );
            const res = await fetch(`${stack.services[service].url}${read.path}`, {
              method: read.method,
              headers: {
                'x-internal-token': token,
                'x-request-id': requestId,
                ...(read.method === 'POST' ? { 'content-type': 'application/json' } : {}),
              },
              body: read.method === 'POST' ? JSON.stringify({ api_key: tenant.apiKey }) : undefined,
              signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
            });
            await res.text();
            sample.read = res.status;
            sample.retryAfter = res.headers.get('retry-after');
          } catch (err) {
            sample.read = `no answer: ${String(err)}`;
          }
          samples.push(sample);
          await sleep(1_000);
        }
      }),
    );
    return { samples, done };
  }

  /** A sample of audit's /metrics: `audit_batch_size_count` (batches written), `audit_queue_messages`. */
  async function auditMetric(name: 'audit_batch_size_count' | 'audit_queue_messages'): Promise<number> {
    const text = await (await fetch(`${stack.services.audit.url}/metrics`)).text();
    const value = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1];
    return value === undefined ? NaN : Number(value);
  }

  /**
   * Whole again, from `since`: mandates, identity and audit ready; through the gateway a create
   * (identity's key check, a mandates write), its verification, an API key created (an identity
   * write) and the tenant's events read (an audit read); and audit writing the events again (a
   * batch written since `batchesAtEnd`, the count when the cut ended). Each polled in turn; answers
   * the milliseconds it took, when each step first passed, and the create's mandate.
   */
  async function wholeAgain(
    tenant: { id: string; auth: string },
    since: number,
    label: string,
    batchesAtEnd: number,
  ) {
    const api = apiClient(stack.gateway.url);
    const { auth } = tenant;
    const phases: Record<string, number> = {};
    const until = (what: string, check: () => Promise<string | undefined>) =>
      pollSince(since, 60_000, `${label}: ${what}`, check).then((ms) => void (phases[what] = ms));
    for (const service of MONGO_SERVICES)
      await until(`${service} /readyz`, async () => {
        const res = await fetch(`${stack.services[service].url}/readyz`, {
          signal: AbortSignal.timeout(5_000),
        });
        return res.status === 200 ? undefined : `${res.status} ${await res.text()}`;
      });
    let attempt = 0;
    let mandateId = '';
    await until('a create', async () => {
      const res = await api('POST', '/v1/mandates', { auth, body: mandateBody(attempt++, `${label}-whole`) });
      mandateId = res.body?.id;
      return res.status === 201 ? undefined : `${res.status} ${res.text}`;
    });
    await until('its verification', async () => {
      const res = await api('POST', '/v1/verify', {
        auth,
        body: { mandate_id: mandateId, action: 'payments:create', amount: 1, currency: 'EUR' },
      });
      return res.status === 200 && res.body.decision === 'ALLOW' ? undefined : `${res.status} ${res.text}`;
    });
    await until('an API key created', async () => {
      const res = await api('POST', `/v1/tenants/${tenant.id}/api-keys`, {
        auth,
        body: { name: `${label}-whole`, scopes: ['verify'] },
      });
      return res.status === 201 ? undefined : `${res.status} ${res.text}`;
    });
    await until('events read', async () => {
      const res = await api('GET', '/v1/events?limit=1', { auth });
      return res.status === 200 ? undefined : `${res.status} ${res.text}`;
    });
    await until('audit writing', async () => {
      const batches = await auditMetric('audit_batch_size_count');
      return batches > batchesAtEnd
        ? undefined
        : `${batches} batches written, ${batchesAtEnd} at the cut's end`;
    });
    return { ms: Date.now() - since, phases, mandateId };
  }

  /** Polls `check` (undefined: passed) every 100 ms; answers the ms from `since` it passed at, or throws after `withinMs`. */
  async function pollSince(
    since: number,
    withinMs: number,
    what: string,
    check: () => Promise<string | undefined>,
  ): Promise<number> {
    for (;;) {
      const failed = await check().catch((err: unknown) => `threw ${String(err)}`);
      if (failed === undefined) return Date.now() - since;
      if (Date.now() > since + withinMs) throw new Error(`not within ${withinMs} ms: ${what}: ${failed}`);
      await sleep(100);
    }
  }

  /**
   * The load of one row: mandates created and verified (6 workers), API keys created one after
   * another, and the tenant's events read, until `stop()`; every call in `calls`, every 2xx's
   * event owed in `produced`.
   */
  function load(
    tenant: { id: string; auth: string },
    label: string,
    produced: Produced,
    calls: Call[],
    stop: () => boolean,
  ) {
    const gateway = stack.gateway.url;
    const apiKeys = async () => {
      for (let i = 0; !stop(); i++) {
        await stepUntil(gateway, tenant.auth, produced, calls, {
          rid: `${label}-k-${i}`,
          path: `/v1/tenants/${tenant.id}/api-keys`,
          body: { name: `${label}-${i}`, scopes: ['verify'] },
          expected: 201,
          type: 'API_KEY_CREATED',
        });
        // A pace, not a synchronisation: a few keys a second, not thousands over a 60 s cut.
        await sleep(250);
      }
    };
    const reads = async () => {
      for (let i = 0; !stop(); i++) {
        const call = await send(
          gateway,
          tenant.auth,
          'GET',
          '/v1/events?limit=1',
          `${label}-e-${i}`,
          undefined,
          calls,
        );
        if (call.status !== undefined) {
          produced.statuses.set(call.status, (produced.statuses.get(call.status) ?? 0) + 1);
          if (audited(call)) produced.byType.API_CALL.add(call.rid);
        } else produced.clientErrors.push(`${call.rid}: ${call.error}`);
        await sleep(250);
      }
    };
    return Promise.all([runLoad(gateway, tenant.auth, label, produced, calls, stop, 6), apiKeys(), reads()]);
  }

  /**
   * Cuts the MongoDB connections of `cut` for `cutMs` under load, waits until the stack is whole
   * and 5 more mandates are through, and checks the row (docs/TESTING.md, "Fault matrix").
   */
  async function expectWholeAfterCut(label: string, cut: MongoService[], cutMs: number) {
    const created = await createTenant(stack, { name: label, plan: 'enterprise' });
    const tenant = { id: created.tenant.id, auth: created.auth, apiKey: created.api_key.api_key };
    const produced = new Produced();
    const calls: Call[] = [];
    let stopping = false;
    let watching = true;
    const running = load(tenant, label, produced, calls, () => stopping);
    let watched: ReturnType<typeof watch> | undefined;
    let cutAt = 0;
    let restoredAt = 0;
    let wholeMs = 0;
    /** When each step of wholeAgain first passed, in ms after the cut ended. */
    let phases: Record<string, number> = {};
    /** Messages in the audit queue as the cut ended, and when the last of them was stored. */
    let backlogAtEnd = NaN;
    let caughtUpMs = 0;
    let doneAtCut = 0;
    let doneAtWhole = 0;
    try {
      await waitFor(() => produced.done >= 5, 'the first 5 mandates', 120_000);
      watched = watch(cut, tenant, () => !watching);
      for (const service of cut) proxies[service].cut();
      cutAt = Date.now();
      doneAtCut = produced.done;
      // The cut's length is the scenario.
      await sleep(cutMs);
      for (const service of cut) proxies[service].restore();
      restoredAt = Date.now();
      backlogAtEnd = await auditMetric('audit_queue_messages');
      const whole = await wholeAgain(tenant, restoredAt, label, await auditMetric('audit_batch_size_count'));
      ({ ms: wholeMs, phases } = whole);
      // Caught up: the broker's backlog stored, up to the whole create's MANDATE_CREATED (the queue
      // is first in, first out), within 30 s while the load goes on. The three services share the
      // one single-threaded stand-in, so the drain runs at what the load leaves of its write rate
      // (docs/DECISIONS.md#recovery); a tenant's batches that wait for their turn are written as
      // one append (docs/DECISIONS.md, "A tamper-evident audit log: RFC 9162, one tree per
      // tenant"), else the drain fell behind the load and took 17 s to minutes.
      const api = apiClient(stack.gateway.url);
      caughtUpMs = await pollSince(restoredAt, 30_000, `${label}: audit caught up`, async () => {
        const res = await api('GET', `/v1/events?type=MANDATE_CREATED&resource_id=${whole.mandateId}`, {
          auth: tenant.auth,
        });
        return res.status === 200 && res.body.data.length === 1 ? undefined : `${res.status} ${res.text}`;
      });
      watching = false;
      await watched.done;
      doneAtWhole = produced.done;
      await waitFor(() => produced.done >= doneAtWhole + 5, '5 more mandates once whole', 60_000);
      stopping = true;
      await running;
    } finally {
      // A row that failed half-way leaves no load or watch running into the next one.
      stopping = true;
      watching = false;
      for (const service of cut) proxies[service].restore();
    }
    const wholeAt = restoredAt + wholeMs;
    const samples = watched!.samples;

    const during = calls.filter((c) => c.sentAt >= cutAt && c.sentAt < restoredAt);
    const statusesDuring: Record<string, number> = {};
    for (const c of during) {
      const key = `${c.status ?? 'no answer'}${c.message && c.status !== 200 ? ` ${c.message}` : ''}`;
      statusesDuring[key] = (statusesDuring[key] ?? 0) + 1;
    }
    const seenDown = cut.filter((s) => samples.some((x) => x.service === s && x.down));
    const refusedRead = cut.filter((s) => samples.some((x) => x.service === s && x.read === 503));
    process.stdout.write(
      `[fault] MongoDB cut ${cutMs / 1000} s (${cut.join(', ')}): whole ${wholeMs} ms after the cut ended ` +
        `(each step passed at ${JSON.stringify(phases)}); audit caught up ${caughtUpMs} ms after it, ` +
        `${backlogAtEnd} messages queued at its end; ` +
        `answers to requests sent during the cut ${JSON.stringify(statusesDuring)}; ` +
        `${samples.length} looks at the cut services: /livez saw the store down in ${JSON.stringify(seenDown)}, ` +
        `a read answered 503 by ${JSON.stringify(refusedRead)}\n`,
    );
    await expectStoredOnce(
      { url: stack.services.audit.url, internalSecret: stack.internalSecret },
      { tenantId: tenant.id, produced, count: produced.done },
      TYPES,
      `MongoDB cut ${cutMs / 1000} s under load (${cut.join(', ')})`,
      {
        cut_ms: restoredAt - cutAt,
        whole_ms_after_cut: wholeMs,
        audit_caught_up_ms_after_cut: caughtUpMs,
        mandates_done_at_cut: doneAtCut,
        mandates_done_at_whole: doneAtWhole,
        calls_during_cut: during.length,
      },
    );
    // The cut bit: every cut service's /livez saw its store down (a probe's checks give up after
    // 5 s); over 60 s, each one's own API refused a read and requests through the gateway failed
    // too. A 6 s cut may fail nothing: a query waits for the connection up to mongoose's 10 s
    // buffer and is answered once it is back.
    const failedDuring = during.some((c) => c.status === 503);
    expect({ seenDown, ...(cutMs >= 60_000 ? { refusedRead, failedDuring } : {}) }).toEqual({
      seenDown: cut,
      ...(cutMs >= 60_000 ? { refusedRead: cut, failedDuring: true } : {}),
    });
    // Each service itself, not only the gateway in front of it (which answers a failed key check
    // with its own 503): a read is answered, 200 or 503 with Retry-After, never a 500.
    expect(samples.filter((x) => !(x.read === 200 || (x.read === 503 && Number(x.retryAfter) > 0)))).toEqual(
      [],
    );
    // Every failure a 503 with Retry-After (docs/API.md, "Retries"): never a 500, never unanswered.
    expect(calls.filter((c) => c.error !== undefined).map((c) => `${c.rid}: ${c.error}`)).toEqual([]);
    expect(
      serverErrors(calls)
        .filter((e) => e.status !== 503 || !(Number(e.retryAfter) > 0))
        .map((e) => ({ ...e, message: calls.find((c) => c.rid === e.rid)?.message })),
    ).toEqual([]);
    // Alive all along, under the bound set above: no supervisor restarts a process that recovers by itself.
    expect(samples.filter((x) => x.livez !== 200 || x.failAfterMs !== LIVENESS_FAIL_AFTER_MS)).toEqual([]);
    // Whole within the bound, and nothing failed once whole.
    expect(wholeMs).toBeLessThanOrEqual(WHOLE_WITHIN_MS);
    expect(calls.filter((c) => c.sentAt >= wholeAt && (c.status ?? 0) >= 500).map((c) => c.rid)).toEqual([]);
  }

  it('when identity’s MongoDB connection is cut for 6 s under load, then every failure is a 503 with Retry-After, every event of a 2xx is stored once, /livez stays 200, and the stack is whole within 10 s', async () => {
    await expectWholeAfterCut('identity-6s', ['identity'], 6_000);
  }, 240_000);

  it('when audit’s MongoDB connection is cut for 6 s under load, then every failure is a 503 with Retry-After, the events sent meanwhile are stored once after it, /livez stays 200, and the stack is whole within 10 s', async () => {
    await expectWholeAfterCut('audit-6s', ['audit'], 6_000);
  }, 240_000);

  it('when the MongoDB connections of mandates and audit are cut for 60 s under load, then every failure is a 503 with Retry-After, every event of a 2xx is stored once, /livez stays 200 (LIVENESS_FAIL_AFTER_MS 90 s), and the stack is whole within 10 s', async () => {
    await expectWholeAfterCut('mandates-audit-60s', ['mandates', 'audit'], 60_000);
  }, 300_000);

  it('when identity’s MongoDB connection is cut for 60 s under load, then every failure is a 503 with Retry-After, every event of a 2xx is stored once, /livez stays 200 (LIVENESS_FAIL_AFTER_MS 90 s), and the stack is whole within 10 s', async () => {
    await expectWholeAfterCut('identity-60s', ['identity'], 60_000);
  }, 300_000);
});
