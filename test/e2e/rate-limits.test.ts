import {
  AMQP_URL,
  REDIS_URL,
  apiClient,
  createTenant,
  eventually,
  startService,
  startStack,
  type ServiceProcess,
  type Stack,
} from '../support/stack';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';

/**
 * Rate limits and quotas with the gateway as its own process, twice: two replicas on the same
 * Redis share one budget; one of them reaches Redis through a proxy the test cuts.
 */
describe('end to end: rate limits and quotas on the real Redis, two gateway replicas', () => {
  // beta: one token per 100 s after a burst of 5, so counts are exact; enterprise: a quota of 3.
  const overrides = JSON.stringify({
    beta: { global: { rate: 0.01, burst: 5 } },
    enterprise: { monthly_quota: 3 },
  });
  let stack: Stack;
  let proxy: TcpProxy;
  let second: ServiceProcess;
  let api1: ReturnType<typeof apiClient>;
  let api2: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    proxy = await startTcpProxy('127.0.0.1', Number(new URL(REDIS_URL).port || 6379));
    stack = await startStack({ gateway: { PLAN_OVERRIDES: overrides } });
    second = await startService(
      'gateway',
      {
        INTERNAL_TOKEN_SECRET: stack.internalSecret,
        AMQP_URL,
        AMQP_NAMESPACE: stack.namespace,
        REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
        // The stack's own keys: both replicas share its counters (stop() deletes them).
        REDIS_PREFIX: stack.redisPrefix,
        OPERATOR_TOKEN: stack.operatorToken,
        MANDATES_URL: stack.services.mandates.url,
        VERIFY_URL: stack.services.verify.url,
        IDENTITY_URL: stack.services.identity.url,
        AUDIT_URL: stack.services.audit.url,
        PLAN_OVERRIDES: overrides,
      },
      'gateway-2',
    );
    api1 = apiClient(stack.gateway.url);
    api2 = apiClient(second.url);
    // A replica still connecting to Redis decides alone (its per-process limiter): the shared
    // budget below holds once both have reached it. A start waits for that 3 s at most, which a
    // loaded machine can exceed.
    for (const url of [stack.gateway.url, second.url])
      await eventually(
        async () => {
          const ready = (await (await fetch(`${url}/readyz`)).json()) as { checks: Record<string, string> };
          return ready.checks.rate_limiter === 'ok' ? true : undefined;
        },
        30_000,
        `${url}: the rate limiter on Redis`,
      );
  }, 90_000);

  afterAll(async () => {
    await second?.stop();
    await stack?.stop();
    await proxy?.close();
  }, 30_000);

  const readyz = async (): Promise<{ status: number; body: { checks: Record<string, string> } }> => {
    const r = await fetch(`${second.url}/readyz`);
    return { status: r.status, body: (await r.json()) as { checks: Record<string, string> } };
  };

  const newTenant = async (plan: 'beta' | 'enterprise') =>
    (await createTenant(stack, { name: `Limits ${plan}`, plan })).auth;

  it('when a key spends its burst across both replicas, then both answer 429 "Rate limit exceeded" with Retry-After, at most half a burst over', async () => {
    const burst = 5;
    const auth = await newTenant('beta');
    const rs = await Promise.all([
      ...[1, 2, 3].map(() => api1('GET', '/v1/mandates', { auth })),
      ...[1, 2].map(() => api2('GET', '/v1/mandates', { auth })),
    ]);
    expect(rs.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    // Not necessarily at the sixth request (docs/DEPLOYMENT.md, "Rate limits and quotas"): a replica
    // decides on its own view while half the burst would remain and adds that pass to Redis within
    // 20 ms, so a sixth on the other replica may still pass before it lands. Two replicas together
    // let through at most half a burst more than the bucket holds; once Redis holds every pass,
    // both refuse.
    const before: number[] = [];
    for (const api of [api1, api2]) {
      let limited: Awaited<ReturnType<typeof api>> | undefined;
      for (let attempt = 0; attempt < 20 && !limited; attempt++) {
        const r = await api('GET', '/v1/mandates', { auth });
        if (r.status === 429) limited = r;
        else {
          before.push(r.status);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
      expect(limited?.status).toBe(429);
      expect(limited!.body).toEqual({ error: 'TOO_MANY_REQUESTS', message: 'Rate limit exceeded' });
      expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(limited!.headers.get('ratelimit-limit')).toBe(String(burst));
    }
    // What passed before the refusals: 200s only, within the bound.
    expect(before.every((status) => status === 200)).toBe(true);
    expect(burst + before.length).toBeLessThanOrEqual(burst + Math.floor(burst / 2));
  });

  it('when the monthly quota is spent, then 429 "Monthly quota exceeded" with Retry-After counting to the next month (UTC)', async () => {
    const auth = await newTenant('enterprise');
    for (const api of [api1, api2, api1])
      expect((await api('GET', '/v1/mandates', { auth })).status).toBe(200);
    const over = await api2('GET', '/v1/mandates', { auth });
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ error: 'TOO_MANY_REQUESTS', message: 'Monthly quota exceeded' });
    const now = new Date();
    const toNextMonth = (Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1) - now.getTime()) / 1000;
    expect(Math.abs(Number(over.headers.get('retry-after')) - toNextMonth)).toBeLessThan(10);
  });

  it('when Redis is cut away from one replica, then it keeps serving, logs it once and /readyz says degraded; when Redis is back, it shares the budget again', async () => {
    const auth = await newTenant('beta');
    expect((await readyz()).body.checks.rate_limiter).toBe('ok');

    proxy.cut();
    await eventually(
      async () => {
        const r = await readyz();
        return r.status === 200 && r.body.checks.rate_limiter!.startsWith('degraded') ? r : undefined;
      },
      10_000,
      'degraded readiness',
    );
    const served = await api2('GET', '/v1/mandates', { auth });
    expect(served.status).toBe(200);
    expect(served.headers.get('ratelimit-limit')).toBe('5');
    expect(second.output.join('').match(/Redis unreachable/g)).toHaveLength(1);

    proxy.restore();
    await eventually(
      async () => ((await readyz()).body.checks.rate_limiter === 'ok' ? true : undefined),
      10_000,
      'the limiter back on Redis',
    );

    const again = await newTenant('beta');
    const rs = await Promise.all([
      ...[1, 2, 3].map(() => api1('GET', '/v1/mandates', { auth: again })),
      ...[1, 2].map(() => api2('GET', '/v1/mandates', { auth: again })),
    ]);
    expect(rs.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect((await api2('GET', '/v1/mandates', { auth: again })).status).toBe(429);
  });
});
