/**
 * `npm run bench:budgets` — what a budget costs (docs/PERFORMANCE.md, "Budgets benchmark"; the
 * goals of docs/API.md#budgets' issue: a budgeted verify and an authorization at most 1.5× an
 * unbudgeted verify's p50 and CPU, and `GET …/budget` under 5 ms with 100,000 authorizations).
 *
 * Part 1, on the processes `npm run start:services` starts (two verify replicas, in-memory stores,
 * the real Redis and RabbitMQ), through the gateway, open loop (bench/open-loop.ts: latency from
 * each request's planned send time), in interleaved rounds so a loaded machine hits each alike:
 *   plain   POST /v1/verify with an amount, on a mandate without a budget
 *   budget  POST /v1/verify with an amount, on a mandate with a budget (reads what is available)
 *   hold    POST /v1/mandates/{id}/authorizations on that budgeted mandate
 * CPU is every process of the stack together, in ms per request.
 *
 * Part 2, the mandates service in-process on its memory store (the read is the service's own: the
 * gateway's hop is part 1's): one mandate with BENCH_AUTHORIZATIONS (100,000) authorizations in its
 * period, half captured, seeded through the store, against one with none, `GET …/budget` open loop,
 * interleaved rounds.
 *
 * Settings: BENCH_RATE (requests/s of part 1, default 40), BENCH_READ_RATE (part 2, default 200),
 * BENCH_DURATION (s per round, default 10), BENCH_ROUNDS (default 3), BENCH_AUTHORIZATIONS.
 */
import { newId } from '@mandate/shared/core';
import { callerFor, testTokens } from '@mandate/shared/testing';
import { startService } from '@mandate/mandates/testing';
import { apiClient, startStack, type Stack } from '../test/support/stack';
import { openLoop, type OpenLoopRequest, type OpenLoopResult } from './open-loop';
import { cpuTicks } from './proc-stats';

const RATE = Number(process.env.BENCH_RATE ?? 40);
const READ_RATE = Number(process.env.BENCH_READ_RATE ?? 200);
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const AUTHORIZATIONS = Number(process.env.BENCH_AUTHORIZATIONS ?? 100_000);
const TICK_MS = 10; // USER_HZ 100

const UNLIMITED = JSON.stringify({
  enterprise: { global: { rate: 1_000_000, burst: 1_000_000 }, monthly_quota: 1_000_000_000 },
});
/** Large enough that no hold of the run is refused: what is measured is the accepted path. */
const HUGE_BUDGET = { amount: 1_000_000_000_000, period: 'month', timezone: 'Europe/Berlin' };

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const fmt = (x: number) => x.toFixed(2);

interface Measured extends OpenLoopResult {
  cpuMsPerRequest: number;
  /** The stack's CPU per request by process (part 1 only): where a ratio's difference lies. */
  byProcess?: Map<string, number>;
}

/** The stack's processes' CPU, in clock ticks, by process (gateway, mandates, verify#1, …). */
function stackTicks(stack: Stack): Map<string, number> {
  const procs: [string, number][] = [['gateway', stack.gateway.child.pid!]];
  for (const [name, list] of Object.entries(stack.replicas))
    list.forEach((p, i) => procs.push([list.length > 1 ? `${name}#${i + 1}` : name, p.child.pid!]));
  return new Map(
    procs.map(([name, pid]) => {
      const [user, sys] = cpuTicks(pid);
      return [name, user + sys];
    }),
  );
}

async function measure(
  stack: Stack | null,
  origin: string,
  requests: OpenLoopRequest[],
  rate: number,
  seconds: number,
): Promise<Measured> {
  if (!stack) {
    const before = process.cpuUsage();
    const result = await openLoop(origin, requests, rate, seconds, { connections: 32 });
    const used = process.cpuUsage(before);
    return { ...result, cpuMsPerRequest: (used.user + used.system) / 1000 / result.sent };
  }
  const before = stackTicks(stack);
  const result = await openLoop(origin, requests, rate, seconds, { connections: 32 });
  const byProcess = new Map(
    [...stackTicks(stack)].map(([name, ticks]) => [
      name,
      ((ticks - (before.get(name) ?? 0)) * TICK_MS) / result.sent,
    ]),
  );
  const cpuMsPerRequest = [...byProcess.values()].reduce((a, b) => a + b, 0);
  return { ...result, cpuMsPerRequest, byProcess };
}

/** Interleaved rounds of each target; prints every round and the medians. */
async function rounds(
  title: string,
  targets: Record<string, () => Promise<Measured>>,
): Promise<Record<string, Measured[]>> {
  const names = Object.keys(targets);
  const out: Record<string, Measured[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let i = 0; i < ROUNDS; i++) {
    // Each round starts with the next target, so none always runs first.
    for (let k = 0; k < names.length; k++) {
      const name = names[(i + k) % names.length]!;
      const r = await targets[name]!();
      out[name]!.push(r);
      console.log(
        `${title} round ${i + 1} ${name.padEnd(7)} p50 ${fmt(r.p50).padStart(7)} ms  p90 ${fmt(r.p90).padStart(7)}  ` +
          `p99 ${fmt(r.p99).padStart(7)}  cpu ${fmt(r.cpuMsPerRequest)} ms/req  non-2xx ${r.non2xx}  errors ${r.errors}  ` +
          `send lag ${fmt(r.maxSendLagMs)} ms`,
      );
      if (r.byProcess)
        console.log(
          `  cpu ms/req by process: ${[...r.byProcess].map(([p, ms]) => `${p} ${fmt(ms)}`).join(', ')}`,
        );
    }
  }
  return out;
}

/** Per round the ratio of `of` to `to` (p50 and CPU), and the medians' ratio. */
function ratios(all: Record<string, Measured[]>, of: string, to: string): string {
  const p50 = all[of]!.map((r, i) => r.p50 / all[to]![i]!.p50);
  const cpu = all[of]!.map((r, i) => r.cpuMsPerRequest / all[to]![i]!.cpuMsPerRequest);
  const x = (v: number) => `${v.toFixed(2)}×`;
  return (
    `${of} / ${to}: p50 ${x(median(p50))} (rounds ${p50.map(x).join(', ')}), ` +
    `CPU ${x(median(cpu))} (rounds ${cpu.map(x).join(', ')})`
  );
}

async function throughTheStack(): Promise<void> {
  const stack = await startStack(
    { all: { LOG_LEVEL: 'warn' }, gateway: { PLAN_OVERRIDES: UNLIMITED } },
    { replicas: { verify: 2 } },
  );
  try {
    const api = apiClient(stack.gateway.url);
    const t = await api('POST', '/v1/platform/tenants', {
      auth: stack.operatorToken,
      body: { name: 'budgets bench', plan: 'enterprise' },
    });
    if (t.status !== 201) throw new Error(`tenant: ${t.status} ${t.text}`);
    const key = `${t.body.tenant.id}:${t.body.api_key.api_key}`;
    const mandate = async (budget?: typeof HUGE_BUDGET) => {
      const m = await api('POST', '/v1/mandates', {
        auth: key,
        body: {
          principal: 'user_alice',
          delegate: 'agent_bob',
          scope: { actions: ['payments:*'], constraints: { currency: 'EUR' }, ...(budget ? { budget } : {}) },
        },
      });
      if (m.status !== 201) throw new Error(`mandate: ${m.status} ${m.text}`);
      return m.body.id as string;
    };
    const plain = await mandate();
    const budgeted = await mandate(HUGE_BUDGET);
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const post = (path: string, body: unknown): OpenLoopRequest[] => [
      { method: 'POST', path, headers, body: JSON.stringify(body) },
    ];
    const verifyOf = (id: string) =>
      post('/v1/verify', { mandate_id: id, action: 'payments:create', amount: 100, currency: 'EUR' });
    const requests = {
      plain: verifyOf(plain),
      budget: verifyOf(budgeted),
      hold: post(`/v1/mandates/${budgeted}/authorizations`, {
        action: 'payments:create',
        amount: 1,
        currency: 'EUR',
      }),
    };
    const targets = Object.fromEntries(
      Object.entries(requests).map(([name, reqs]) => [
        name,
        () => measure(stack, stack.gateway.url, reqs, RATE, DURATION),
      ]),
    );
    // Warm-up: every path compiled and every connection open before anything counts.
    for (const reqs of Object.values(requests)) await measure(stack, stack.gateway.url, reqs, RATE, 3);
    const all = await rounds('stack', targets);
    console.log(ratios(all, 'budget', 'plain'));
    console.log(ratios(all, 'hold', 'plain'));
  } finally {
    await stack.stop();
  }
}

/** Seeds `count` authorizations in the mandate's current period through the store (half captured). */
async function seed(
  svc: Awaited<ReturnType<typeof startService>>,
  tenantId: string,
  mandateId: string,
  count: number,
) {
  const store = svc.deps.store.authorizations;
  const mandate = (await svc.deps.store.get(tenantId, mandateId))!;
  const budget = await fetchBudget(svc.url, tenantId, mandateId);
  const now = new Date();
  const expires = new Date(now.getTime() + 3_600_000).toISOString();
  for (let i = 0; i < count; i++) {
    const id = newId('sau');
    const outcome = await store.hold(
      tenantId,
      {
        id,
        mandate_id: mandate.id,
        action: 'payments:create',
        resource: null,
        amount: 100,
        currency: 'EUR',
        status: 'HELD',
        captured_amount: 0,
        period_start: budget.period_start,
        expires_at: expires,
        created_at: now.toISOString(),
        updated_at: now.toISOString(),
      },
      { start: budget.period_start, limit: HUGE_BUDGET.amount },
      undefined,
      () => [],
    );
    if (!outcome.held) throw new Error('seed hold refused');
    if (i % 2 === 0)
      await store.settle(tenantId, id, { status: 'CAPTURED', captured_amount: 80 }, now, () => []);
  }
}

async function fetchBudget(url: string, tenantId: string, mandateId: string) {
  const token = await testTokens.mint(callerFor(tenantId), 'mandates');
  const res = await fetch(`${url}/v1/mandates/${mandateId}/budget`, {
    headers: { 'x-internal-token': token },
  });
  if (res.status !== 200) throw new Error(`budget: ${res.status} ${await res.text()}`);
  return (await res.json()) as { period_start: string; held: number; captured: number };
}

async function budgetRead(): Promise<void> {
  const svc = await startService();
  try {
    const tenantId = newId('tnt');
    const create = async () => {
      const token = await testTokens.mint(callerFor(tenantId), 'mandates');
      const res = await fetch(`${svc.url}/v1/mandates`, {
        method: 'POST',
        headers: { 'x-internal-token': token, 'content-type': 'application/json' },
        body: JSON.stringify({
          principal: 'user_alice',
          delegate: 'agent_bob',
          scope: { actions: ['payments:*'], constraints: { currency: 'EUR' }, budget: HUGE_BUDGET },
        }),
      });
      if (res.status !== 201) throw new Error(`mandate: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { id: string }).id;
    };
    const full = await create();
    const empty = await create();
    const seededAt = Date.now();
    await seed(svc, tenantId, full, AUTHORIZATIONS);
    const b = await fetchBudget(svc.url, tenantId, full);
    console.log(
      `seeded ${AUTHORIZATIONS} authorizations in ${((Date.now() - seededAt) / 1000).toFixed(1)} s: ` +
        `held ${b.held}, captured ${b.captured}`,
    );
    // A token a round (internal tokens are short-lived), minted before the round starts.
    const read = async (id: string) => {
      const token = await testTokens.mint(callerFor(tenantId), 'mandates');
      const reqs = [
        { method: 'GET', path: `/v1/mandates/${id}/budget`, headers: { 'x-internal-token': token } },
      ] as unknown as OpenLoopRequest[];
      return measure(null, svc.url, reqs, READ_RATE, DURATION);
    };
    await read(full);
    await read(empty);
    const all = await rounds('budget read', {
      [`${AUTHORIZATIONS / 1000}k`]: () => read(full),
      none: () => read(empty),
    });
    console.log(ratios(all, `${AUTHORIZATIONS / 1000}k`, 'none'));
  } finally {
    await svc.stop();
  }
}

async function main() {
  console.log(
    `budgets bench: ${ROUNDS} interleaved rounds of ${DURATION} s; the machine's load is in every figure`,
  );
  if (process.env.BENCH_PART !== 'read') await throughTheStack();
  if (process.env.BENCH_PART !== 'stack') await budgetRead();
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
