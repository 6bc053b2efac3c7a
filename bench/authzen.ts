/**
 * `npm run bench:authzen` — evaluations per second through the gateway on the full stack
 * (`npm run start:services`: five processes, two verify replicas, real Redis and RabbitMQ), single
 * `POST /v1/verify` calls against `POST /access/v1/evaluations` batches of 100 items over 10
 * mandates, in interleaved rounds (single, batch, single, batch, …, each for the same duration and
 * connection count), so machine noise hits both alike. Reports every round, the median of each and
 * the ratio of evaluations per second (docs/PERFORMANCE.md, "AuthZEN batch benchmark"; the issue's
 * goal: at least 10×).
 *
 * One tenant, 10 mandates; the plan's limits are raised (PLAN_OVERRIDES) so that the limiter counts
 * every item but refuses none: what is measured is the work, not the limit.
 * Settings: BENCH_DURATION (s per round and target, default 10), BENCH_ROUNDS (default 3),
 * BENCH_CONNECTIONS (default 16), BENCH_WARMUP (s of each before measuring, default 5),
 * VERIFY_REPLICAS (default 2).
 */
import autocannon from 'autocannon';
import { apiClient, startStack } from '../test/support/stack';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5);
const VERIFY_REPLICAS = Number(process.env.VERIFY_REPLICAS ?? 2);
const BATCH = 100;
const MANDATES = 10;

const UNLIMITED = JSON.stringify({
  enterprise: { global: { rate: 1_000_000, burst: 1_000_000 }, monthly_quota: 1_000_000_000 },
});

interface Round {
  target: 'single' | 'batch';
  requestsPerSecond: number;
  evaluationsPerSecond: number;
  p50: number;
  non2xx: number;
  errors: number;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

type Stack = Awaited<ReturnType<typeof startStack>>;
type Requests = { singles: autocannon.Request[]; batch: autocannon.Request[] };

/** One tenant, its mandates, and the requests of each target; a batch is checked to answer 100 allows. */
async function setUp(stack: Stack): Promise<Requests> {
  const api = apiClient(stack.gateway.url);
  const t = await api('POST', '/v1/platform/tenants', {
    auth: stack.operatorToken,
    body: { name: 'authzen bench', plan: 'enterprise' },
  });
  if (t.status !== 201) throw new Error(`tenant: ${t.status} ${t.text}`);
  const key = `${t.body.tenant.id}:${t.body.api_key.api_key}`;
  const ids: string[] = [];
  for (let i = 0; i < MANDATES; i++) {
    const m = await api('POST', '/v1/mandates', {
      auth: key,
      body: { principal: 'user_alice', delegate: 'agent_bob', scope: { actions: ['payments:*'] } },
    });
    if (m.status !== 201) throw new Error(`mandate: ${m.status} ${m.text}`);
    ids.push(m.body.id);
  }
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const singles: autocannon.Request[] = ids.map((id) => ({
    method: 'POST',
    path: '/v1/verify',
    headers,
    body: JSON.stringify({ mandate_id: id, action: 'payments:create', delegate_id: 'agent_bob' }),
  }));
  const batch: autocannon.Request[] = [
    {
      method: 'POST',
      path: '/access/v1/evaluations',
      headers,
      body: JSON.stringify({
        subject: { type: 'agent', id: 'agent_bob' },
        action: { name: 'payments:create' },
        evaluations: Array.from({ length: BATCH }, (_, i) => ({
          resource: { type: 'mandate', id: ids[i % MANDATES] },
        })),
      }),
    },
  ];
  // Every request of a batch round answers 100 decisions: check one before measuring.
  const probe = await api('POST', '/access/v1/evaluations', {
    auth: key,
    body: JSON.parse(batch[0]!.body as string),
  });
  if (
    probe.status !== 200 ||
    probe.body.evaluations.length !== BATCH ||
    !probe.body.evaluations.every((e: { decision: boolean }) => e.decision)
  )
    throw new Error(`batch probe: ${probe.status} ${probe.text.slice(0, 200)}`);

  return { singles, batch };
}

/** The warm-up of each target, then ROUNDS interleaved rounds, each printed as it ends. */
async function measure(stack: Stack, { singles, batch }: Requests): Promise<Round[]> {
  const run = async (target: Round['target'], duration: number): Promise<Round> => {
    const r = await autocannon({
      url: stack.gateway.url,
      connections: CONNECTIONS,
      duration,
      requests: target === 'single' ? singles : batch,
    });
    const rps = r.requests.average;
    return {
      target,
      requestsPerSecond: rps,
      evaluationsPerSecond: target === 'single' ? rps : rps * BATCH,
      p50: r.latency.p50,
      non2xx: r.non2xx,
      errors: r.errors + r.timeouts,
    };
  };
  await run('single', WARMUP);
  await run('batch', WARMUP);
  const rounds: Round[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    for (const target of ['single', 'batch'] as const) {
      const r = await run(target, DURATION);
      rounds.push(r);
      console.log(
        `round ${i + 1} ${target.padEnd(6)} ${r.requestsPerSecond.toFixed(1).padStart(8)} req/s ` +
          `${r.evaluationsPerSecond.toFixed(0).padStart(7)} evaluations/s  p50 ${r.p50} ms  non-2xx ${r.non2xx}  errors ${r.errors}`,
      );
    }
  }
  return rounds;
}

/** The medians and the per-round ratios of evaluations per second. */
function report(rounds: Round[]): void {
  const single = median(rounds.filter((r) => r.target === 'single').map((r) => r.evaluationsPerSecond));
  const batched = median(rounds.filter((r) => r.target === 'batch').map((r) => r.evaluationsPerSecond));
  const ratios = rounds
    .filter((r) => r.target === 'batch')
    .map(
      (r, i) => r.evaluationsPerSecond / rounds.filter((s) => s.target === 'single')[i]!.evaluationsPerSecond,
    );
  console.log(
    `median: single ${single.toFixed(0)} evaluations/s, batch of ${BATCH} ${batched.toFixed(0)} evaluations/s; ` +
      `ratio ${(batched / single).toFixed(1)}× (per round: ${ratios.map((x) => x.toFixed(1) + '×').join(', ')})`,
  );
  if (rounds.some((r) => r.non2xx > 0 || r.errors > 0)) console.log('WARNING: some answers were not 2xx');
}

async function main() {
  const stack = await startStack(
    { all: { LOG_LEVEL: 'warn' }, gateway: { PLAN_OVERRIDES: UNLIMITED } },
    { replicas: { verify: VERIFY_REPLICAS } },
  );
  try {
    report(await measure(stack, await setUp(stack)));
  } finally {
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
