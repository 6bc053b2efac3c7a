import { mongo } from 'mongoose';
import { MONGO_TARGET } from '@mandate/shared/testing';
import { mongoStackEnv, type MongoStackEnv } from '../support/mongo-standin';
import {
  AMQP_URL,
  apiClient,
  createTenant,
  eventually,
  startService,
  startStack,
  type ServiceProcess,
  type Stack,
} from '../support/stack';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';
import { expectStoredOnce, waitFor, withPort, noLimits, wholeAgain, WHOLE_WITHIN_MS } from './producers';
import { Produced, type CountedType } from './workload';

/**
 * Rows of the fault matrix (docs/TESTING.md, "Fault matrix") where something hangs (accepts
 * connections, never answers: `tcp-proxy.ts` `hang()`) or where audit loses its broker with
 * messages delivered and not yet acknowledged. The five services as processes on the real
 * RabbitMQ and Redis, audit on its Mongo adapter; every AMQP connection goes through a proxy
 * (audit's through one of its own, and its MongoDB too), and the gateway the load talks to reaches
 * verify, mandates and identity through proxies. Each row: no request waits for what hangs beyond
 * its documented bound, every 5xx a 503 with Retry-After, every event of a 2xx stored once, and the
 * service whole again within 10 s of the fault's end (asserted and printed).
 */
const TYPES: CountedType[] = ['MANDATE_CREATED', 'VERIFICATION_PERFORMED', 'API_CALL'];
/** The gateway's UPSTREAM_TIMEOUT_MS here: an upstream silent this long is answered 503 (docs/CONFIGURATION.md). */
const UPSTREAM_BOUND_MS = 4_000;
/** Past two bounds, so that a call retried after its bound would still meet the hang. */
const UPSTREAM_HANG_MS = 2 * UPSTREAM_BOUND_MS + 2_000;
/** Past the 10 s publish timeout of the outbox relay and the event spools (docs/DEPLOYMENT.md, "Delivery guarantees"). */
const BROKER_HANG_MS = 12_000;
/**
 * A call during the broker hang: mandates waits at most 1 s for the broker (docs/DEPLOYMENT.md,
 * "Delivery guarantees"), gateway and verify not at all; the rest is the loaded machine. A call that
 * waited for the broker would take the rest of the hang. The same bound for `/readyz` and `/metrics`:
 * Kubernetes' probes wait 6 s (docs/DEPLOYMENT.md, "Liveness").
 */
const NOT_WAITING_MS = 6_000;
/** A call still unanswered after this counts as never answered. */
const CLIENT_TIMEOUT_MS = 60_000;
/** The gateway's answer while identity cannot say who the caller is: no caller, so no API_CALL. */
const IDENTITY_DOWN = 'Identity service unavailable';

const NO_LIMITS = noLimits('mandates.create');

const MANDATE = {
  principal: { id: 'user_h', type: 'person' },
  delegate: { id: 'agent_h', type: 'agent' },
  scope: { actions: ['payments:*'], constraints: { max_amount: 50_000, currency: 'EUR' } },
};
const verifyBody = (mandateId: string) => ({
  mandate_id: mandateId,
  action: 'payments:create',
  amount: 1_200,
  currency: 'EUR',
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One answer as the client read it, and when it was asked. */
interface Answer {
  rid: string;
  path: string;
  sentAt: number;
  ms: number;
  status: number;
  retryAfter: string | null;
  message?: string;
}

/** What a load saw: the events its answers owe (Produced), and every answer with its latency. */
class Traffic extends Produced {
  readonly answers: Answer[] = [];

  /** The answers to calls sent from `from` until `to`. */
  sentBetween(from: number, to: number): Answer[] {
    return this.answers.filter((a) => a.sentAt >= from && a.sentAt < to);
  }

  /** 5xx answers other than a 503 with Retry-After: never allowed. */
  undocumented(): string[] {
    return this.answers
      .filter((a) => a.status >= 500 && !(a.status === 503 && Number(a.retryAfter) > 0))
      .map((a) => `${a.rid} ${a.path}: ${a.status} retry-after=${a.retryAfter} ${a.message}`);
  }
}

const slowest = (answers: Answer[]) => Math.max(0, ...answers.map((a) => a.ms));

describe(`fault matrix: RabbitMQ and upstream services hung, audit's broker gone with messages unacknowledged (audit on ${MONGO_TARGET})`, () => {
  let databases: MongoStackEnv;
  let amqpProxy: TcpProxy;
  let auditAmqpProxy: TcpProxy;
  let auditMongoProxy: TcpProxy;
  const upstreamProxies = new Map<'verify' | 'mandates' | 'identity', TcpProxy>();
  let stack: Stack;
  let gateway: ServiceProcess;
  let probe: { tenantId: string; auth: string };
  /** Set once the file is over: a load a failed test left running stops, so jest can exit. */
  let halted = false;

  beforeAll(async () => {
    databases = mongoStackEnv('hangs');
    const auditMongo = databases.env.audit.MONGO_URL!;
    const mongoTarget = new URL(auditMongo);
    auditMongoProxy = await startTcpProxy(mongoTarget.hostname, Number(mongoTarget.port || 27017));
    const amqp = new URL(AMQP_URL);
    amqpProxy = await startTcpProxy(amqp.hostname, Number(amqp.port || 5672));
    auditAmqpProxy = await startTcpProxy(amqp.hostname, Number(amqp.port || 5672));
    stack = await startStack({
      all: { AMQP_URL: withPort(AMQP_URL, amqpProxy.port) },
      audit: {
        ...databases.env.audit,
        MONGO_URL: withPort(auditMongo, auditMongoProxy.port),
        AMQP_URL: withPort(AMQP_URL, auditAmqpProxy.port),
      },
      gateway: { PLAN_OVERRIDES: NO_LIMITS },
    });
    // The gateway the tests talk to: the stack's, started again with verify, mandates and identity
    // behind proxies this test hangs, and a bound of its own.
    for (const name of ['verify', 'mandates', 'identity'] as const) {
      const target = new URL(stack.services[name].url);
      upstreamProxies.set(name, await startTcpProxy(target.hostname, Number(target.port)));
    }
    await stack.gateway.stop();
    const env = { ...stack.gateway.env };
    delete env.PORT;
    const behind = (name: 'verify' | 'mandates' | 'identity') =>
      withPort(stack.services[name].url, upstreamProxies.get(name)!.port);
    gateway = await startService(
      'gateway',
      {
        ...env,
        VERIFY_URL: behind('verify'),
        MANDATES_URL: behind('mandates'),
        IDENTITY_URL: behind('identity'),
        UPSTREAM_TIMEOUT_MS: String(UPSTREAM_BOUND_MS),
      },
      'gateway (upstreams proxied)',
    );
    probe = await tenant('probe');
  }, 240_000);

  afterAll(async () => {
    halted = true;
    await gateway?.stop();
    await stack?.stop();
    for (const proxy of [amqpProxy, auditAmqpProxy, auditMongoProxy, ...upstreamProxies.values()])
      await proxy?.close();
    await databases?.drop();
  }, 90_000);

  async function tenant(name: string) {
    const created = await createTenant(stack, { name, plan: 'enterprise' }, gateway.url);
    return { tenantId: created.tenant.id, auth: created.auth };
  }

  const api = (...args: Parameters<ReturnType<typeof apiClient>>) => apiClient(gateway.url)(...args);

  /** One call, recorded in `traffic` with its latency; no answer within CLIENT_TIMEOUT_MS is a client error. */
  async function send(
    traffic: Traffic,
    auth: string,
    rid: string,
    method: string,
    path: string,
    body?: unknown,
  ) {
    const sentAt = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), CLIENT_TIMEOUT_MS);
    });
    const res = await Promise.race([
      api(method, path, { auth, body, headers: { 'x-request-id': rid } }),
      timedOut,
    ])
      .catch((err: unknown) => {
        traffic.clientErrors.push(`${rid}: ${String(err)}`);
        return null;
      })
      .finally(() => clearTimeout(timer));
    if (res === undefined) traffic.clientErrors.push(`${rid}: no answer within ${CLIENT_TIMEOUT_MS} ms`);
    if (!res) return undefined;
    const message = typeof res.body?.message === 'string' ? (res.body.message as string) : undefined;
    traffic.answers.push({
      rid,
      path,
      sentAt,
      ms: Date.now() - sentAt,
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      message,
    });
    traffic.statuses.set(res.status, (traffic.statuses.get(res.status) ?? 0) + 1);
    // Every authenticated call is audited (docs/API.md, "Audit of every call"): not a 401, nor a
    // 503 because identity could not say who called.
    if (res.status !== 401 && !(res.status === 503 && message === IDENTITY_DOWN))
      traffic.byType.API_CALL.add(rid);
    return res;
  }

  /**
   * `concurrency` workers until `stop()`: each creates a mandate, reads it back (a GET, which the
   * gateway's client would retry) and verifies it. Every 2xx's event is owed.
   */
  function load(auth: string, label: string, traffic: Traffic, stop: () => boolean, concurrency = 8) {
    let next = 0;
    const worker = async () => {
      while (!stop() && !halted) {
        const i = next++;
        const created = await send(traffic, auth, `${label}-c-${i}`, 'POST', '/v1/mandates', MANDATE);
        if (created?.status !== 201) {
          // A back-off while the fault lasts; the load goes on with the next mandate.
          await sleep(100);
          continue;
        }
        traffic.byType.MANDATE_CREATED.add(`${label}-c-${i}`);
        await send(traffic, auth, `${label}-g-${i}`, 'GET', `/v1/mandates/${created.body.id}`);
        const verified = await send(
          traffic,
          auth,
          `${label}-v-${i}`,
          'POST',
          '/v1/verify',
          verifyBody(created.body.id),
        );
        if (verified?.status === 200) traffic.byType.VERIFICATION_PERFORMED.add(`${label}-v-${i}`);
        traffic.done++;
      }
    };
    return Promise.all(Array.from({ length: concurrency }, worker));
  }

  /** Whole again (producers.ts): the probe tenant's create and verify answered, their events stored. */
  const whole = async (since: number, label: string) =>
    (
      await wholeAgain(
        gateway.url,
        { url: stack.services.audit.url, internalSecret: stack.internalSecret },
        probe,
        since,
        label,
      )
    ).storedMs;

  /** Every process's /readyz and /metrics (the gateway's with the operator token), each timed. */
  function probeOperations(): Promise<{ what: string; status: number | string; ms: number }[]> {
    const processes = [gateway, ...Object.values(stack.replicas).flat()];
    return Promise.all(
      processes.flatMap((p) =>
        ['/readyz', '/metrics'].map(async (path) => {
          const started = Date.now();
          const status = await fetch(`${p.url}${path}`, {
            headers: p === gateway ? { authorization: `Bearer ${stack.operatorToken}` } : {},
            signal: AbortSignal.timeout(2 * BROKER_HANG_MS),
          }).then(
            async (res) => {
              await res.arrayBuffer();
              return res.status;
            },
            (err: unknown) => String(err),
          );
          return { what: `${p.name} ${path}`, status, ms: Date.now() - started };
        }),
      ),
    );
  }

  const audit = () => ({ url: stack.services.audit.url, internalSecret: stack.internalSecret });

  it('when RabbitMQ hangs for 12 s under load (every service connection open, nothing answered), then no request waits for it, /readyz and /metrics answer within 6 s, and once it answers again every event of a 2xx is stored once and the service is whole within 10 s', async () => {
    const { tenantId, auth } = await tenant('broker-hang');
    const traffic = new Traffic();
    let stopped = false;
    const running = load(auth, 'bhang', traffic, () => stopped);
    await waitFor(() => traffic.done >= 5, 'the first mandates of the load');
    const brokers = [amqpProxy, auditAmqpProxy];
    for (const proxy of brokers) proxy.hang();
    const hungAt = Date.now();
    const doneAtHang = traffic.done;
    // Well into the hang, and past mandates' 1 s wait for the broker; a probe that waits does not
    // hold the hang up.
    const operations = sleep(2_000).then(probeOperations);
    // The hang's length is the scenario.
    await sleep(BROKER_HANG_MS);
    const doneDuringHang = traffic.done - doneAtHang;
    for (const proxy of brokers) proxy.restore();
    const endedAt = Date.now();
    const recoveryMs = await whole(endedAt, 'broker-hang');
    stopped = true;
    await running;
    const probes = await operations;

    const duringHang = traffic.sentBetween(hungAt, endedAt);
    await expectStoredOnce(
      audit(),
      { tenantId, produced: traffic, count: traffic.done },
      TYPES,
      `RabbitMQ hung ${BROKER_HANG_MS / 1000} s under load`,
      {
        mandates_done_during_hang: doneDuringHang,
        slowest_answer_ms_during_hang: slowest(duringHang),
        slowest_probe_ms: Math.max(...probes.map((o) => o.ms)),
        whole_ms_after_hang_end: recoveryMs,
      },
    );
    expect(traffic.undocumented()).toEqual([]);
    // Nothing needs the broker to answer: every call sent during the hang answered 2xx, promptly.
    expect(duringHang.filter((a) => a.status >= 300).map((a) => `${a.rid}: ${a.status}`)).toEqual([]);
    expect(doneDuringHang).toBeGreaterThan(0);
    expect(slowest(duringHang)).toBeLessThan(NOT_WAITING_MS);
    expect(probes.filter((o) => typeof o.status !== 'number' || o.ms >= NOT_WAITING_MS)).toEqual([]);
    expect(recoveryMs).toBeLessThanOrEqual(WHOLE_WITHIN_MS);
  }, 180_000);

  it.each([
    { service: 'verify', unavailable: 'Verify service unavailable' },
    { service: 'mandates', unavailable: 'Mandates service unavailable' },
    { service: 'identity', unavailable: IDENTITY_DOWN },
  ] as const)(
    'when $service hangs behind the gateway for 10 s under load, then every call answers within its bound (UPSTREAM_TIMEOUT_MS, GETs too), what needs $service with 503 and Retry-After, every event of a 2xx is stored once, and the service is whole within 10 s',
    async ({ service, unavailable }) => {
      const { tenantId, auth } = await tenant(`${service}-hang`);
      const proxy = upstreamProxies.get(service)!;
      const traffic = new Traffic();
      let stopped = false;
      const running = load(auth, `${service}-hang`, traffic, () => stopped);
      const existing = await api('POST', '/v1/mandates', { auth, body: MANDATE });
      expect(existing.status).toBe(201);
      await waitFor(() => traffic.done >= 3, 'the first mandates of the load');
      proxy.hang();
      const hungAt = Date.now();
      // A read while it hangs: a GET, which the gateway's client retries after other failures.
      await sleep(1_000);
      const read = await send(
        traffic,
        auth,
        `${service}-hang-read`,
        'GET',
        `/v1/mandates/${existing.body.id}`,
      );
      // The hang's length is the scenario.
      await sleep(Math.max(0, UPSTREAM_HANG_MS - (Date.now() - hungAt)));
      proxy.restore();
      const endedAt = Date.now();
      const recoveryMs = await whole(endedAt, `${service}-hang`);
      stopped = true;
      await running;

      const refused = traffic.sentBetween(hungAt, endedAt).filter((a) => a.status === 503);
      await expectStoredOnce(
        audit(),
        { tenantId, produced: traffic, count: traffic.done },
        TYPES,
        `${service} hung ${UPSTREAM_HANG_MS / 1000} s behind the gateway under load`,
        {
          refused_503: refused.length,
          slowest_answer_ms: slowest(traffic.answers),
          slowest_503_ms: slowest(refused),
          read_while_hung_status: read?.status ?? 0,
          read_while_hung_ms: traffic.answers.find((a) => a.rid === `${service}-hang-read`)?.ms ?? NaN,
          whole_ms_after_hang_end: recoveryMs,
        },
      );
      expect(traffic.clientErrors).toEqual([]);
      expect(traffic.undocumented()).toEqual([]);
      // The fault bit: what needed the hung service was refused, as the service being unavailable.
      expect(refused.filter((a) => a.message === unavailable).length).toBeGreaterThan(0);
      // No call waited more than one bound for it (with room for the loaded machine): a call
      // retried after its bound would have waited two.
      expect(slowest(traffic.answers)).toBeLessThan(2 * UPSTREAM_BOUND_MS);
      expect(recoveryMs).toBeLessThanOrEqual(WHOLE_WITHIN_MS);
    },
    180_000,
  );

  /** The events audit has stored, counted in its database directly (not through the proxy audit uses). */
  async function storedInAuditDb(): Promise<number> {
    const client = new mongo.MongoClient(databases.env.audit.MONGO_URL!, { serverSelectionTimeoutMS: 5_000 });
    try {
      await client.connect();
      return await client.db(databases.env.audit.MONGO_DB).collection('events').countDocuments({});
    } finally {
      await client.close();
    }
  }

  it('when audit holds delivered, unacknowledged messages and its broker connection is cut, then the writes under way finish, the messages come again after it reconnects, and every event is stored exactly once (none lost, none doubled), whole within 10 s', async () => {
    const { tenantId, auth } = await tenant('audit-unacked');
    const traffic = new Traffic();
    let stopped = false;
    const running = load(auth, 'unacked', traffic, () => stopped);
    await waitFor(() => traffic.done >= 5, 'the first mandates of the load');
    // Audit's writes wait in the proxy: what it is delivered meanwhile stays unacknowledged. The
    // fault's shape: deliveries go on arriving for 2 s, none acknowledged.
    auditMongoProxy.hang();
    await sleep(2_000);
    auditAmqpProxy.cut();
    const cutAt = Date.now();
    const storedAtCut = await storedInAuditDb();
    auditMongoProxy.restore();
    // The writes under way finish after the cut: stored, and their messages never acknowledged.
    const storedAfterCut = await eventually(
      async () => {
        const stored = await storedInAuditDb();
        return stored > storedAtCut ? stored : undefined;
      },
      30_000,
      'the writes under way at the cut to be stored',
      200,
    );
    auditAmqpProxy.restore();
    const reconnectAt = Date.now();
    const recoveryMs = await whole(reconnectAt, 'audit-reconnect');
    stopped = true;
    await running;

    await expectStoredOnce(
      audit(),
      { tenantId, produced: traffic, count: traffic.done },
      TYPES,
      "audit's broker connection cut with messages delivered, unacknowledged",
      {
        stored_after_the_cut_unacknowledged: storedAfterCut - storedAtCut,
        cut_ms: reconnectAt - cutAt,
        whole_ms_after_reconnect: recoveryMs,
      },
    );
    expect(traffic.clientErrors).toEqual([]);
    expect(traffic.undocumented()).toEqual([]);
    expect(storedAfterCut).toBeGreaterThan(storedAtCut);
    expect(recoveryMs).toBeLessThanOrEqual(WHOLE_WITHIN_MS);
  }, 180_000);
});
