/**
 * `npm run bench:identity-idle` — identity's CPU while 10,000 API keys are in use across two
 * gateway replicas and none of them changes (docs/PERFORMANCE.md, "Round 12: the floor as the
 * yardstick, and credential checks that follow changes (issue 35)"). Each key is used on one gateway, half on each (BENCH_BOTH=1: on both); then, for BENCH_SECONDS (60: one key-use report of each gateway falls in it), a trickle of
 * requests keeps using random keys on both gateways while identity's CPU and its requests by
 * route are measured, beside the same measure before any key was in use.
 *
 * Env: BENCH_KEYS (10000), BENCH_SECONDS (60), BENCH_TRICKLE_PER_S (20), BENCH_BOTH=1 (every key on
 * both gateways, not half on each: twice the warm-up), BENCH_CHECK_INTERVAL_MS (the gateways'
 * CREDENTIAL_CHECK_INTERVAL_MS, made only while a gateway holds no live credential feed; the
 * feed's silence bound is twice it).
 * On a shared machine the absolute figures move with the neighbours: compare the two windows.
 */
import { startService, startStack, AMQP_URL, REDIS_URL, apiClient } from '../test/support/stack';
import { cpuTicks } from './proc-stats';

const KEYS = Number(process.env.BENCH_KEYS ?? 10_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 60);
const TRICKLE_PER_S = Number(process.env.BENCH_TRICKLE_PER_S ?? 20);
const BOTH = process.env.BENCH_BOTH === '1';
const CONCURRENCY = 32;
/** Identity's CPU target while nothing changes: 2 % of one core, i.e. 20 ms of CPU a second. */
const TARGET_MS_PER_S = 20;

const ticks = (pid: number) => cpuTicks(pid).reduce((a, b) => a + b, 0);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** http_requests_total of a process by route (all methods and statuses together). */
async function requestsByRoute(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('http_requests_total{')) continue;
    const route = /route="([^"]*)"/.exec(line)?.[1] ?? '?';
    out.set(route, (out.get(route) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return out;
}

/** Runs `task` for 0..n-1, `CONCURRENCY` at a time. */
async function pool(n: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) await task(next++);
    }),
  );
}

type ApiClient = ReturnType<typeof apiClient>;
type Stack = Awaited<ReturnType<typeof startStack>>;
interface Window {
  cpuMsPerS: number;
  perS: (readonly [string, number])[];
}

/** The gateways' environment: plans that let 10,000 key creations and their first uses through. */
function gatewayEnv(): Record<string, string> {
  return {
    LOG_LEVEL: 'warn',
    ...(process.env.BENCH_CHECK_INTERVAL_MS
      ? { CREDENTIAL_CHECK_INTERVAL_MS: process.env.BENCH_CHECK_INTERVAL_MS, KEY_CACHE_TTL_MS: '3600000' }
      : {}),
    // 10,000 key creations in one tenant, and the requests that put them in use.
    PLAN_OVERRIDES: JSON.stringify({
      enterprise: {
        global: { rate: 100_000, burst: 100_000 },
        monthly_quota: 100_000_000,
        endpoints: { 'apikeys.create': { rate: 100_000, burst: 100_000 } },
      },
    }),
  };
}

/** A second gateway replica beside the stack's, on the same services, broker and Redis. */
function startSecondGateway(stack: Stack, env: Record<string, string>) {
  return startService(
    'gateway',
    {
      INTERNAL_TOKEN_SECRET: stack.internalSecret,
      AMQP_URL,
      AMQP_NAMESPACE: stack.namespace,
      REDIS_URL,
      REDIS_PREFIX: stack.redisPrefix,
      OPERATOR_TOKEN: stack.operatorToken,
      MANDATES_URL: stack.services.mandates.url,
      VERIFY_URL: stack.replicas.verify.map((v) => v.url).join(','),
      IDENTITY_URL: stack.services.identity.url,
      AUDIT_URL: stack.services.audit.url,
      AUTH_FAILURE_LIMIT_PER_MINUTE: '1000000',
      ...env,
    },
    'gateway-2',
  );
}

/** Identity's CPU (ms per second) and requests by route over `seconds`, while `during` runs. */
async function measure(
  identity: { url: string; pid: number },
  seconds: number,
  during: (until: number) => Promise<void>,
): Promise<Window> {
  const routes = await requestsByRoute(identity.url);
  const cpu = ticks(identity.pid);
  const until = Date.now() + seconds * 1000;
  await during(until);
  const cpuMsPerS = ((ticks(identity.pid) - cpu) * 10) / seconds;
  const after = await requestsByRoute(identity.url);
  const perS = [...after]
    .map(([route, n]) => [route, (n - (routes.get(route) ?? 0)) / seconds] as const)
    .filter(([route, r]) => r > 0 && route !== '/metrics');
  return { cpuMsPerS, perS };
}

/** A tenant on the enterprise plan and its admin credential. */
async function createTenant(gateway: ApiClient, operatorToken: string) {
  const created = await gateway('POST', '/v1/platform/tenants', {
    auth: operatorToken,
    body: { name: 'Idle bench', plan: 'enterprise' },
  });
  if (created.status !== 201) throw new Error(`tenant: ${created.status} ${created.text}`);
  const tenantId = created.body.tenant.id as string;
  return { tenantId, admin: `${tenantId}:${created.body.api_key.api_key}` };
}

/** KEYS API keys of the tenant, each then used once (or on both gateways): what each gateway caches. */
async function keysInUse(gateways: ApiClient[], tenant: { tenantId: string; admin: string }) {
  const started = Date.now();
  const secrets: string[] = [];
  await pool(KEYS, async (i) => {
    const res = await gateways[0]!('POST', `/v1/tenants/${tenant.tenantId}/api-keys`, {
      auth: tenant.admin,
      body: { name: `idle ${i}`, scopes: ['mandates:read'] },
    });
    if (res.status !== 201) throw new Error(`key ${i}: ${res.status} ${res.text}`);
    secrets[i] = `${tenant.tenantId}:${res.body.api_key}`;
  });
  const keysCreated = Date.now();
  const counts = { non2xx: 0 };
  const use = async (g: number, i: number) => {
    const res = await gateways[g]!('GET', '/v1/mandates?limit=1', { auth: secrets[i]! });
    if (res.status !== 200) counts.non2xx++;
  };
  if (BOTH) await pool(KEYS * 2, (n) => use(n % 2, n >> 1));
  else await pool(KEYS, (i) => use(i % 2, i));
  process.stdout.write(
    `${KEYS} keys created in ${((keysCreated - started) / 1000).toFixed(0)} s, ` +
      `in use (${BOTH ? 'each on both gateways' : 'half on each gateway'}) after ${((Date.now() - keysCreated) / 1000).toFixed(0)} s more\n`,
  );
  return { use, counts };
}

/** Until `until`, a trickle over random keys on both gateways: they stay in use, and each is still cached. */
async function trickle(use: (g: number, i: number) => Promise<void>, until: number) {
  let n = 0;
  while (Date.now() < until) {
    const i = Math.floor(Math.random() * KEYS);
    await use(BOTH ? n % 2 : i % 2, i);
    n++;
    await sleep(1000 / TRICKLE_PER_S);
  }
}

function report(before: Window, inUse: Window, non2xx: number) {
  const show = (label: string, m: Window) => {
    process.stdout.write(
      `${label}: identity ${m.cpuMsPerS.toFixed(1)} ms CPU/s (${(m.cpuMsPerS / 10).toFixed(2)} % of a core)\n`,
    );
    for (const [route, r] of m.perS) process.stdout.write(`    ${route}: ${r.toFixed(2)}/s\n`);
  };
  show(`no key in use (${Math.min(SECONDS, 20)} s)`, before);
  show(`${KEYS} keys in use on 2 gateways, none changing (${SECONDS} s, ${TRICKLE_PER_S} requests/s)`, inUse);
  const resolves = inUse.perS.find(([route]) => route.includes('/keys/resolve'))?.[1] ?? 0;
  process.stdout.write(
    `non-2xx answers: ${non2xx}\n` +
      `key resolves while nothing changed: ${(resolves * SECONDS).toFixed(0)}\n` +
      `goal "identity under 2 % of a core with ${KEYS} keys in use": ${inUse.cpuMsPerS < TARGET_MS_PER_S ? 'met' : 'not met'} ` +
      `(${(inUse.cpuMsPerS / 10).toFixed(2)} %; on a shared machine, read it against the ${(before.cpuMsPerS / 10).toFixed(2)} % with no key)\n`,
  );
}

async function main() {
  const env = gatewayEnv();
  const stack = await startStack({ all: { LOG_LEVEL: 'warn' }, gateway: env });
  const second = await startSecondGateway(stack, env);
  const gateways = [apiClient(stack.gateway.url), apiClient(second.url)];
  const identity = { url: stack.services.identity.url, pid: stack.services.identity.child.pid! };
  try {
    const tenant = await createTenant(gateways[0]!, stack.operatorToken);
    await sleep(5_000);
    const before = await measure(identity, Math.min(SECONDS, 20), async (until) => {
      await sleep(until - Date.now());
    });
    const { use, counts } = await keysInUse(gateways, tenant);
    await sleep(5_000);
    const inUse = await measure(identity, SECONDS, (until) => trickle(use, until));
    report(before, inUse, counts.non2xx);
  } finally {
    await second.stop();
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
