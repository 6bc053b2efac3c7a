/**
 * `npm run bench:verify` — POST /v1/verify through the gateway on the full stack (five processes,
 * real Redis and RabbitMQ, two hops), against a bare express app answering the same JSON, on the
 * same machine (load generator included), in **interleaved rounds**: express, stack, express,
 * stack, … each for the same duration with the same connection count, so machine noise (which
 * moves either by ±20 % between minutes) hits both alike. It reports every round, the median of
 * each target and the per-round ratios; a raw node:http server runs once at the end for scale.
 *
 * Many tenants, each with its own key and mandate, so plan rate limits are not what is measured.
 * Settings: BENCH_DURATION (s per round and target, default 10), BENCH_ROUNDS (default 3),
 * BENCH_CONNECTIONS (default 32), BENCH_TENANTS (default 40), BENCH_WARMUP (s of load on the stack
 * before measuring, default 10; express gets 3 s), BENCH_ONLY=stack (no baselines, for quick
 * iterations), BENCH_PROFILE=<dir> (gateway and verify write V8 CPU profiles of the first measured
 * stack round there; read them with `tsx bench/profile-top.ts <file>`), BENCH_NODE_OPTIONS (passed to
 * gateway and verify, e.g. `--perf-basic-prof` for `perf record -p <pid>`).
 * Gateway and verify also report their event-loop delay and utilisation during each stack round
 * (bench/probe.cjs, perf_hooks.monitorEventLoopDelay sampled every BENCH_LOOP_RESOLUTION_MS, default
 * 10: at 1 ms the sampling itself cost the stack ~5 % of its CPU at 500/s, docs/PERFORMANCE.md round 9),
 * and their GC pauses by kind; every process's CPU line carries the time its main thread spent
 * runnable but waiting for a CPU (/proc/<pid>/schedstat). BENCH_PROFILE_KIND=heap makes
 * BENCH_PROFILE write sampling heap profiles instead (what survived a scavenge; `heap-all`: every
 * allocation, what a scavenge freed too); BENCH_OUTPUT_DIR=<dir>
 * keeps what each service printed (with SERVICE_NODE_FLAGS=--trace-gc-nvp, its GC trace).
 *
 * **The floor** (bench/floor-server.ts) is the baseline the goals compare with: the stack's shape
 * with none of its work (a bare express "gateway" checking that Authorization exists and forwarding
 * over a keep-alive undici Pool to a bare express "verify" that reads one Redis key). Every round
 * runs bare express (for reference), the floor and the stack, one after the other, in both modes.
 * BENCH_CONTENTION=1 spins one extra busy process (one core) for the whole measurement, and the
 * goals under contention apply. Each goal line of issue 35 is printed as met / not met, with the
 * medians and the spread (min–max) of the rounds.
 *
 * `BENCH_MODE=open` measures latency open-loop instead (bench/open-loop.ts): at each offered rate of
 * BENCH_RATES (default 50,200,500 verify/s) requests leave on a uniform schedule and latency counts
 * from the planned send time; bare express and the stack take turns at each rate within each round
 * (BENCH_ROUNDS, BENCH_DURATION s each). Per rate it prints p50/p90/p99/max for both, CPU µs per call
 * of every process, the event-loop delay of gateway, verify and audit, and the issue's goal: stack
 * p50 ≤ express p50 + 1 ms and stack p99 ≤ 2 × express p99 + 1 ms.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import Redis from 'ioredis';
import { REDIS_URL, apiClient, startStack, verifyCounters } from '../test/support/stack';
import { LAUNCHER_SERVICE_ENV, defaultVerifyReplicas } from '../scripts/services';
import { cpuTicks, runQueueWaitNs } from './proc-stats';
import { openLoop, type OpenLoopRequest, type OpenLoopResult, type OpenLoopSample } from './open-loop';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const TENANTS = Number(process.env.BENCH_TENANTS ?? 40);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 10);
const ONLY_STACK = process.env.BENCH_ONLY === 'stack';
const PROFILE_DIR = process.env.BENCH_PROFILE;
const OPEN_LOOP = process.env.BENCH_MODE === 'open';
// Open loop only: per-request timestamps in gateway and verify (markRequest), joined into a breakdown.
const BREAKDOWN = OPEN_LOOP && process.env.BENCH_BREAKDOWN === '1';
const RATES = (process.env.BENCH_RATES ?? '50,200,500').split(',').map(Number);
// As `npm run start:services` runs them (VERIFY_REPLICAS, default one per two CPUs).
const VERIFY_REPLICAS = process.env.VERIFY_REPLICAS
  ? Number(process.env.VERIFY_REPLICAS)
  : defaultVerifyReplicas();
const CONTENTION = process.env.BENCH_CONTENTION === '1';

interface Result {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

async function load(
  name: string,
  url: string,
  requests: autocannon.Request[],
  duration = DURATION,
): Promise<Result> {
  const r = await autocannon({ url, connections: CONNECTIONS, duration, requests });
  return {
    name,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
  };
}

function startBare(kind: 'express' | 'http'): Promise<{ url: string; child: ChildProcess }> {
  return startScript(kind, 'bare-server.ts', [kind]);
}

function startScript(
  kind: string,
  script: string,
  args: string[],
): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, script), ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${kind} baseline exited ${code}`)));
    child.stdout!.on('data', (d: Buffer) => {
      const m = /listening (\d+)/.exec(d.toString());
      if (m) resolve({ url: `http://127.0.0.1:${m[1]}`, child });
    });
  });
}

const stopChild = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    child.removeAllListeners('exit');
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });

async function retry<T>(attempts: number, f: () => Promise<T>): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await f();
    } catch (err) {
      if (i >= attempts) throw err;
      process.stdout.write(`start failed (${(err as Error).message.split('\n')[0]}); trying again\n`);
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** BENCH_PASS_ENV=A,B: these variables of the bench's environment go to every service (A/B runs of a setting). */
function passedEnv(): Record<string, string> {
  return Object.fromEntries(
    (process.env.BENCH_PASS_ENV ?? '')
      .split(',')
      .filter((name) => name && process.env[name] !== undefined)
      .map((name) => [name, process.env[name]!]),
  );
}

/** What every probed service gets: the probe preloaded, and where it writes. */
function probeEnvFor(probeDir: string): Record<string, string> {
  // BENCH_NODE_OPTIONS (e.g. --perf-basic-prof, for `perf record -p <pid>`) reaches gateway and verify.
  const nodeOptions = [process.env.BENCH_NODE_OPTIONS ?? '', `--require ${path.join(__dirname, 'probe.cjs')}`]
    .join(' ')
    .trim();
  return {
    NODE_OPTIONS: nodeOptions,
    BENCH_PROBE_DIR: probeDir,
    ...(process.env.BENCH_LOOP_RESOLUTION_MS
      ? { BENCH_LOOP_RESOLUTION_MS: process.env.BENCH_LOOP_RESOLUTION_MS }
      : {}),
    ...(BREAKDOWN ? { BENCH_TIMING: '1' } : {}),
    ...(PROFILE_DIR ? { BENCH_PROFILE_DIR: PROFILE_DIR } : {}),
    ...(process.env.BENCH_PROFILE_KIND ? { BENCH_PROFILE_KIND: process.env.BENCH_PROFILE_KIND } : {}),
  };
}

type Stack = Awaited<ReturnType<typeof startStack>>;

function startBenchStack(probeDir: string): Promise<Stack> {
  const probeEnv = probeEnvFor(probeDir);
  // On a loaded machine a service can miss the launcher's start deadline (tsx compiling): try again.
  return retry(3, () =>
    startStack(
      {
        all: { LOG_LEVEL: 'warn', ...passedEnv() },
        gateway: probeEnv,
        verify: probeEnv,
        // As the launcher runs it (LAUNCHER_SERVICE_ENV); BENCH_AUDIT_NICE=0 for an A/B run without it.
        audit: {
          ...probeEnv,
          ...LAUNCHER_SERVICE_ENV.audit,
          ...(process.env.BENCH_AUDIT_NICE ? { PROCESS_NICE: process.env.BENCH_AUDIT_NICE } : {}),
        },
        // They get SIGUSR2 too (the probe window), which would end a process without the probe.
        identity: probeEnv,
        mandates: probeEnv,
      },
      { replicas: { verify: VERIFY_REPLICAS } },
    ),
  );
}

/** TENANTS tenants, each with its key and a mandate, and the verify request of each. */
async function verifyRequests(stack: Stack): Promise<autocannon.Request[]> {
  const api = apiClient(stack.gateway.url);
  const requests: autocannon.Request[] = [];
  for (let i = 0; i < TENANTS; i++) {
    const t = await api('POST', '/v1/platform/tenants', {
      auth: stack.operatorToken,
      body: { name: `bench ${i}`, plan: 'enterprise' },
    });
    if (t.status !== 201) throw new Error(`tenant: ${t.status} ${t.text}`);
    const auth = `Bearer ${t.body.tenant.id}:${t.body.api_key.api_key}`;
    const m = await api('POST', '/v1/mandates', {
      auth: auth.slice(7),
      body: {
        principal: 'user_alice',
        delegate: 'agent_bob',
        scope: { actions: ['payments:*'], constraints: { max_amount: 50_000, currency: 'EUR' } },
      },
    });
    if (m.status !== 201) throw new Error(`mandate: ${m.status} ${m.text}`);
    requests.push({
      method: 'POST',
      path: '/v1/verify',
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify({
        mandate_id: m.body.id,
        action: 'payments:create',
        amount: 1200,
        currency: 'EUR',
      }),
    });
  }
  return requests;
}

type Child = { url: string; child: ChildProcess };
type Floor = { url: string; children: ChildProcess[] };
interface Baselines {
  express?: Child;
  http?: Child;
  floor?: Floor;
}

/**
 * Warm-up: keep-alive pools, key caches, and the JIT — two processes with express, undici, ioredis,
 * amqplib and zod take ~10 s of load on 2 cores before V8 stops optimising (a shorter warm-up
 * measured the compiler, not the stack). The baselines warm up first, so no target goes into round
 * 1 after sitting idle while the others warmed up. Fills `baselines` as they start (to be stopped).
 */
async function startAndWarmUp(
  stack: Stack,
  requests: autocannon.Request[],
  bare: autocannon.Request[],
  baselines: Baselines,
) {
  if (!ONLY_STACK) {
    baselines.express = await startBare('express');
    baselines.http = await startBare('http');
    await load('warm-up', baselines.express.url, bare, 3);
    await load('warm-up', baselines.http.url, bare, 2);
    baselines.floor = await startFloor(stack.redisPrefix);
    await load('warm-up', baselines.floor.url, requests, 3);
  }
  await load('warm-up', stack.gateway.url, requests, WARMUP);
}

/** Every process a verify touches or causes work in (identity answers the key resolutions). */
function stackPids(stack: Stack): Record<string, number> {
  return {
    gateway: stack.gateway.child.pid!,
    ...Object.fromEntries(stack.replicas.verify.map((v, i) => [`verify${i + 1}`, v.child.pid!])),
    audit: stack.services.audit.child.pid!,
    identity: stack.services.identity.child.pid!,
    mandates: stack.services.mandates.child.pid!,
  };
}

interface ClosedLoopRun {
  stackRounds: Result[];
  expressRounds: Result[];
  floorRounds: Result[];
  /** CPU per verify at saturation, every process of the target (Redis and RabbitMQ included) but autocannon. */
  stackCpu: number[];
  floorCpu: number[];
  raw?: Result;
}

interface Measured {
  stack: Stack;
  requests: autocannon.Request[];
  bare: autocannon.Request[];
  baselines: Baselines;
  pids: Record<string, number>;
  background: Record<string, number>;
  probes: () => void;
  probeDir: string;
}

/** One closed-loop round of bare express (the stack's background work sampled too: it would flatter the ratio). */
async function expressRound(m: Measured, express: Child, round: number, run: ClosedLoopRun) {
  const sampler = cpuSampler({
    express: express.child.pid!,
    autocannon: process.pid,
    audit: m.pids.audit!,
    ...m.background,
  });
  const r = await load(`bare express, round ${round}`, express.url, m.bare);
  run.expressRounds.push(r);
  process.stdout.write(
    `round ${round} express ${r.rps.toFixed(0)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms — CPU: ${sampler.stop(r.rps)}\n`,
  );
  await sleep(500);
}

async function floorRound(m: Measured, floor: Floor, round: number, run: ClosedLoopRun) {
  const sampler = cpuSampler({ ...floorPids(floor), autocannon: process.pid, ...m.background });
  const r = await load(`floor, round ${round}`, floor.url, m.requests);
  run.floorRounds.push(r);
  run.floorCpu.push(sampler.totalUsPerRequest(r.rps, ['autocannon']));
  process.stdout.write(
    `round ${round} floor   ${r.rps.toFixed(0)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms — CPU: ${sampler.stop(r.rps)}\n`,
  );
  await sleep(500);
}

async function stackRound(m: Measured, round: number, run: ClosedLoopRun) {
  m.probes();
  const cpu = cpuSampler({ ...m.pids, ...m.background, autocannon: process.pid });
  const full = await load(`full stack, round ${round}`, m.stack.gateway.url, m.requests);
  run.stackCpu.push(cpu.totalUsPerRequest(full.rps, ['autocannon']));
  const usage = cpu.stop(full.rps);
  m.probes();
  run.stackRounds.push(full);
  process.stdout.write(
    `round ${round} stack   ${full.rps.toFixed(0)} req/s, p50 ${full.p50} ms, p99 ${full.p99} ms — CPU: ${usage}\n`,
  );
  await sleep(500);
  process.stdout.write(`  event loop: ${loopReport(m.probeDir, round)}\n`);
  // Let audit and RabbitMQ drain what the stack round left before the next baseline round.
  await sleep(1000);
}

/** Closed loop at saturation: express, the floor and the stack in turn, ROUNDS times. */
async function closedLoopRounds(m: Measured): Promise<ClosedLoopRun> {
  const run: ClosedLoopRun = {
    stackRounds: [],
    expressRounds: [],
    floorRounds: [],
    stackCpu: [],
    floorCpu: [],
  };
  const { express, floor, http } = m.baselines;
  for (let round = 1; round <= ROUNDS; round++) {
    if (express) await expressRound(m, express, round, run);
    if (floor) await floorRound(m, floor, round, run);
    await stackRound(m, round, run);
  }
  if (http) run.raw = await load('raw node:http (once, for scale)', http.url, m.bare);
  const metrics = await verifyCounters(m.stack.internalSecret, m.stack.services.verify.url, 'req_bench');
  process.stdout.write(`verify counters: ${JSON.stringify(metrics)}\n`);
  return run;
}

async function stopAll(
  stack: Stack,
  baselines: Baselines,
  spinner: ChildProcess | undefined,
  probeDir: string,
) {
  if (spinner) spinner.kill('SIGKILL');
  if (baselines.express) await stopChild(baselines.express.child);
  if (baselines.http) await stopChild(baselines.http.child);
  if (baselines.floor) for (const child of baselines.floor.children) await stopChild(child);
  // BENCH_OUTPUT_DIR=<dir>: what each service process printed (e.g. --trace-gc-nvp through SERVICE_NODE_FLAGS).
  if (process.env.BENCH_OUTPUT_DIR)
    for (const [name, processes] of Object.entries({ gateway: [stack.gateway], ...stack.replicas }))
      processes.forEach((p, i) =>
        writeFileSync(path.join(process.env.BENCH_OUTPUT_DIR!, `${name}-${i}.log`), p.output.join('')),
      );
  await stack.stop();
  rmSync(probeDir, { recursive: true, force: true });
}

async function main() {
  process.stdout.write(
    `bench:verify — ${ROUNDS} interleaved round(s) of ${DURATION}s per target, ${CONNECTIONS} connections, ${TENANTS} tenants\n`,
  );
  const probeDir = mkdtempSync(path.join(tmpdir(), 'bench-probe-'));
  const stack = await startBenchStack(probeDir);
  const baselines: Baselines = {};
  let spinner: ChildProcess | undefined;
  let run: ClosedLoopRun | undefined;
  try {
    const requests = await verifyRequests(stack);
    const bare = requests.map((r) => ({ ...r, headers: { 'content-type': 'application/json' } }));
    await startAndWarmUp(stack, requests, bare, baselines);
    const pids = stackPids(stack);
    const probes = () => Object.values(pids).forEach((pid) => process.kill(pid, 'SIGUSR2'));
    const measured: Measured = {
      stack,
      requests,
      bare,
      baselines,
      pids,
      background: brokerPids(),
      probes,
      probeDir,
    };
    if (CONTENTION) {
      // One more process on one core for the whole measurement, as on a shared node.
      spinner = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
      process.stdout.write('contention: one extra process spinning for the whole measurement\n');
    }
    if (OPEN_LOOP) {
      if (!baselines.express) throw new Error('BENCH_MODE=open compares with bare express: unset BENCH_ONLY');
      await openLoopRounds(measured);
      return;
    }
    run = await closedLoopRounds(measured);
  } finally {
    await stopAll(stack, baselines, spinner, probeDir);
  }
  process.stdout.write(closedLoopReport(run));
}

/** The closed-loop table and the goals judged at saturation. */
function closedLoopReport({
  stackRounds,
  expressRounds,
  floorRounds,
  stackCpu,
  floorCpu,
  raw,
}: ClosedLoopRun): string {
  const rows = [
    ...stackRounds.flatMap((s, i) => [
      ...(expressRounds[i] ? [expressRounds[i]!] : []),
      ...(floorRounds[i] ? [floorRounds[i]!] : []),
      s,
    ]),
    ...(raw ? [raw] : []),
  ].map(
    (r) =>
      `| ${r.name.padEnd(34)} | ${r.rps.toFixed(0).padStart(7)} | ${String(r.p50).padStart(4)} ms | ${String(r.p99).padStart(4)} ms | ${String(r.non2xx + r.errors).padStart(11)} |`,
  );
  const m = (rs: Result[], k: 'rps' | 'p50' | 'p99') => median(rs.map((r) => r[k]));
  const failures = stackRounds.reduce((n, r) => n + r.non2xx + r.errors, 0);
  const worstP99 = Math.max(...stackRounds.map((r) => r.p99));
  return [
    '',
    `| ${'target'.padEnd(34)} |   req/s |     p50 |     p99 | non-2xx/err |`,
    `|${'-'.repeat(36)}|---------|---------|---------|-------------|`,
    ...rows,
    '',
    `median full stack: ${m(stackRounds, 'rps').toFixed(0)} req/s, p50 ${m(stackRounds, 'p50')} ms, p99 ${m(stackRounds, 'p99')} ms (worst p99 ${worstP99} ms)`,
    ...expressLines(stackRounds, expressRounds, raw),
    // Issue 24's p99 target, kept for comparison with the older rounds; issue 35's goals are the floor lines.
    `earlier target (issue 24, for reference): p99 ≤ 25 ms in every round ${worstP99 <= 25 ? 'MET' : 'MISSED'}; zero non-2xx (issues 24 and 35) ${failures === 0 ? 'MET' : `MISSED (${failures})`}`,
    ...floorLines(stackRounds, floorRounds, stackCpu, floorCpu),
    '',
  ].join('\n');
}

function expressLines(stackRounds: Result[], expressRounds: Result[], raw: Result | undefined): string[] {
  const m = (rs: Result[], k: 'rps' | 'p50' | 'p99') => median(rs.map((r) => r[k]));
  const ratios = stackRounds
    .map((s, i) => (expressRounds[i] ? s.rps / expressRounds[i]!.rps : NaN))
    .filter((x) => !Number.isNaN(x));
  if (!ratios.length) return [];
  return [
    `median bare express: ${m(expressRounds, 'rps').toFixed(0)} req/s, p50 ${m(expressRounds, 'p50')} ms, p99 ${m(expressRounds, 'p99')} ms`,
    `full stack / express per round: ${ratios.map((r) => `${r.toFixed(2)}×`).join(', ')}; ratio of medians ${(m(stackRounds, 'rps') / m(expressRounds, 'rps')).toFixed(2)}×` +
      (raw ? `; full stack / node:http ${(m(stackRounds, 'rps') / raw.rps).toFixed(2)}×` : ''),
    `earlier targets (issue 24, for reference): ratio of medians ≥ 0.50× ${m(stackRounds, 'rps') / m(expressRounds, 'rps') >= 0.5 ? 'MET' : 'MISSED'}; ratio ≥ 0.50× in every round ${ratios.every((r) => r >= 0.5) ? 'MET' : 'MISSED'} (median ${median(ratios).toFixed(2)}×, worst ${Math.min(...ratios).toFixed(2)}×)`,
  ];
}

function floorLines(
  stackRounds: Result[],
  floorRounds: Result[],
  stackCpu: number[],
  floorCpu: number[],
): string[] {
  if (!floorRounds.length) return [];
  const rps = (rs: Result[]) => median(rs.map((r) => r.rps));
  return [
    `median floor: ${rps(floorRounds).toFixed(0)} req/s (spread ${spread(
      floorRounds.map((r) => r.rps),
      0,
    )}); stack ${spread(
      stackRounds.map((r) => r.rps),
      0,
    )}`,
    `goal "saturation (closed loop) ≥ 1.0× the floor's in the same run": ${(rps(stackRounds) / rps(floorRounds)).toFixed(2)}× ${rps(stackRounds) >= rps(floorRounds) ? 'met' : 'not met'}` +
      (CONTENTION ? ' (under contention)' : ''),
    // Judged against the floor, as the latency is; the first, absolute line beside it
    // (docs/DECISIONS.md, "Verify's CPU goal is the floor's, not a number of microseconds").
    `goal "CPU per verify at saturation, summed over all processes, ≤ the floor's in the same run": ` +
      `${(median(stackCpu) / median(floorCpu)).toFixed(2)}× ${median(stackCpu) <= median(floorCpu) ? 'met' : 'not met'} ` +
      `(stack ${Math.round(median(stackCpu))} µs, spread ${spread(stackCpu, 0)}; floor ${Math.round(median(floorCpu))} µs, spread ${spread(floorCpu, 0)}; ` +
      `the first line's ≤ 250 µs: ${median(stackCpu) <= 250 ? 'met' : 'not met'})`,
  ];
}

interface OpenLoopRates {
  express: OpenLoopResult[];
  floor: OpenLoopResult[];
  stack: OpenLoopResult[];
  cpu: number[];
}

const asOpen = (rs: autocannon.Request[], headers?: Record<string, string>): OpenLoopRequest[] =>
  rs.map((r) => ({
    method: 'POST',
    path: r.path!,
    headers: headers ?? (r.headers as Record<string, string>),
    body: String(r.body),
  }));

const openLine = (name: string, rate: number, round: number, r: OpenLoopResult, cpu: string) =>
  process.stdout.write(
    `round ${round} ${rate}/s ${name.padEnd(7)} p50 ${r.p50} ms, p90 ${r.p90} ms, p99 ${r.p99} ms, max ${r.max} ms, ` +
      `non-2xx/err ${r.non2xx + r.errors}, send lag ≤ ${r.maxSendLagMs} ms — CPU: ${cpu}\n`,
  );

/** One rate of one open-loop round: bare express, the floor, then the stack, on the same schedule. */
async function openLoopRate(m: Measured, rate: number, round: number, window: number, into: OpenLoopRates) {
  const express = m.baselines.express!;
  const floor = m.baselines.floor!;
  const stackRequests = asOpen(m.requests);
  const bareCpu = cpuSampler({ express: express.child.pid!, ...m.background });
  const bare = await openLoop(
    express.url,
    asOpen(m.requests, { 'content-type': 'application/json' }),
    rate,
    DURATION,
  );
  openLine('express', rate, round, bare, bareCpu.stop(rate));
  into.express.push(bare);
  await sleep(500);
  const floorCpu = cpuSampler({ ...floorPids(floor), ...m.background });
  const floored = await openLoop(floor.url, stackRequests, rate, DURATION);
  openLine('floor', rate, round, floored, floorCpu.stop(rate));
  into.floor.push(floored);
  await sleep(500);
  m.probes();
  const stackCpu = cpuSampler({ ...m.pids, ...m.background });
  const full = await openLoop(m.stack.gateway.url, stackRequests, rate, DURATION, {
    idPrefix: BREAKDOWN ? `bench-${round}-${rate}` : undefined,
  });
  const cpu = stackCpu.stop(rate);
  into.cpu.push(stackCpu.totalUsPerRequest(rate));
  m.probes();
  openLine('stack', rate, round, full, cpu);
  into.stack.push(full);
  await sleep(500);
  process.stdout.write(`  event loop: ${loopReport(m.probeDir, window)}\n`);
  if (full.samples) process.stdout.write(breakdownReport(m.probeDir, window, full.samples));
  await sleep(1000);
}

/**
 * The open-loop rounds: in each round, at each rate, bare express, the floor and the stack, on the
 * same schedule; then one table per rate with every round and the goal's check on the medians.
 */
async function openLoopRounds(m: Measured): Promise<void> {
  const results = new Map<number, OpenLoopRates>(
    RATES.map((rate) => [rate, { express: [], floor: [], stack: [], cpu: [] }]),
  );
  let window = 0;
  for (let round = 1; round <= ROUNDS; round++)
    for (const rate of RATES) await openLoopRate(m, rate, round, ++window, results.get(rate)!);
  process.stdout.write(openLoopReport(results));
}

/** Issue 35's goals against the floor: quiet (every rate) or under contention (200 and 500/s). */
function openLoopReport(results: Map<number, OpenLoopRates>): string {
  const p50Slack = CONTENTION ? 1 : 0.5;
  const p99Factor = CONTENTION ? 2 : 1.5;
  const judged = (rate: number) => !CONTENTION || rate === 200 || rate === 500;
  const out = [
    '',
    `| offered | stack p50 (spread) | stack p99 (spread) | floor p50 | floor p99 | express p50 / p99 | p50 ≤ floor + ${p50Slack} | p99 ≤ ${p99Factor} × floor + 1 | CPU µs/verify | non-2xx |`,
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  const verdict = (ok: boolean) => (ok ? 'met' : 'not met');
  const goals: string[] = [];
  let failuresAll = 0;
  const cpuAll: number[] = [];
  for (const [rate, r] of results) {
    const med = (rs: OpenLoopResult[], k: 'p50' | 'p99') =>
      Math.round(median(rs.map((x) => x[k])) * 100) / 100;
    const [sp50, sp99, fp50, fp99] = [
      med(r.stack, 'p50'),
      med(r.stack, 'p99'),
      med(r.floor, 'p50'),
      med(r.floor, 'p99'),
    ];
    const p50Met = sp50 <= fp50 + p50Slack;
    const p99Met = sp99 <= p99Factor * fp99 + 1;
    const failures = r.stack.reduce((n, x) => n + x.non2xx + x.errors, 0);
    failuresAll += failures;
    cpuAll.push(...r.cpu);
    const judge = (ok: boolean, bound: number) =>
      judged(rate) ? `≤ ${bound.toFixed(2)} ${verdict(ok)}` : `(≤ ${bound.toFixed(2)}, not a goal here)`;
    out.push(
      `| ${rate}/s | ${sp50} ms (${spread(r.stack.map((x) => x.p50))}) | ${sp99} ms (${spread(r.stack.map((x) => x.p99))}) | ${fp50} ms | ${fp99} ms | ${med(r.express, 'p50')} / ${med(r.express, 'p99')} ms | ${judge(p50Met, fp50 + p50Slack)} | ${judge(p99Met, p99Factor * fp99 + 1)} | ${Math.round(median(r.cpu))} | ${failures} |`,
    );
    if (judged(rate))
      goals.push(
        `goal "${CONTENTION ? 'under contention' : 'quiet machine'}, ${rate}/s: stack p50 ≤ floor p50 + ${p50Slack} ms": ${verdict(p50Met)}`,
        `goal "${CONTENTION ? 'under contention' : 'quiet machine'}, ${rate}/s: stack p99 ≤ ${p99Factor} × floor p99 + 1 ms": ${verdict(p99Met)}`,
      );
  }
  // At a fixed rate far below saturation a process's idle wake-ups (timers, heartbeats) are shared
  // by few requests, so the figure above is mostly idle cost; the goal is judged at saturation.
  goals.push(
    `goal "CPU per verify at saturation ≤ the floor's": judged in the closed loop (npm run bench:verify); the stack at the rates above ${Math.round(Math.min(...cpuAll))}–${Math.round(Math.max(...cpuAll))} µs`,
    `goal "0 non-2xx in the benchmark": ${verdict(failuresAll === 0)} (${failuresAll})`,
  );
  out.push(
    '',
    `medians of ${ROUNDS} round(s) of ${DURATION} s per rate and target, spread = min–max of the rounds` +
      (CONTENTION ? '; one extra process spinning throughout' : ''),
    ...goals,
    '',
  );
  return out.join('\n');
}

/** The floor's two processes, started after the stack: verify on the stack's Redis, its gateway in front. */
async function startFloor(redisPrefix: string): Promise<{ url: string; children: ChildProcess[] }> {
  const key = `${redisPrefix}bench:floor:mandate`;
  const redis = new Redis(REDIS_URL);
  await redis.set(key, 'ACTIVE');
  redis.disconnect();
  const verify = await startScript('floor verify', 'floor-server.ts', ['verify', REDIS_URL, key]);
  const gateway = await startScript('floor gateway', 'floor-server.ts', ['gateway', verify.url]);
  return { url: gateway.url, children: [gateway.child, verify.child] };
}

const floorPids = (floor: { children: ChildProcess[] }) => ({
  'floor-gateway': floor.children[0]!.pid!,
  'floor-verify': floor.children[1]!.pid!,
});

/** min–max of the rounds. */
const spread = (xs: number[], digits = 2) =>
  `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`;

/** Consecutive marks of one verify (gateway, then verify, then back), each step's time the gap to the one before. */
const STEPS: [string, string][] = [
  ['gw.in', 'client → gateway handler'],
  ['gw.auth', 'authentication'],
  ['gw.limit', 'limiter'],
  ['gw.body', 'body read'],
  ['gw.forward', 'token, idempotency'],
  ['v.in', 'gateway → verify handler'],
  ['v.auth', 'verify: internal token'],
  ['v.body', 'verify: body'],
  ['v.snapshot', 'verify: snapshot read'],
  ['v.decide', 'verify: decision'],
  ['v.sent', 'verify: event, answer'],
  ['gw.done', 'verify → gateway'],
];

/**
 * Where the requests around the p50 (ranks 45–55 %) and the slowest 1 % spent their time, step by
 * step (mean ms of each step): the client's own lag, then the marks gateway and verify recorded
 * for each request id during the window, then the way back to the client.
 */
function breakdownReport(dir: string, window: number, samples: OpenLoopSample[]): string {
  const marks = new Map<string, Record<string, number>>();
  for (const f of readdirSync(dir).filter((f) => f.endsWith(`-${window}.timing.json`))) {
    const flat = JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as (string | number)[];
    for (let i = 0; i + 2 < flat.length; i += 3) {
      const id = flat[i] as string;
      const entry = marks.get(id) ?? {};
      entry[flat[i + 1] as string] ??= flat[i + 2] as number;
      marks.set(id, entry);
    }
  }
  const sorted = [...samples].sort((a, b) => a.latency - b.latency);
  const band = (from: number, to: number) =>
    sorted.slice(
      Math.floor(from * sorted.length),
      Math.max(Math.floor(from * sorted.length) + 1, Math.floor(to * sorted.length)),
    );
  const describe = (name: string, group: OpenLoopSample[]) => {
    const complete = group.filter((s) => STEPS.every(([m]) => marks.get(s.id)?.[m] !== undefined));
    if (complete.length === 0) return `  ${name}: no request with every mark\n`;
    const mean = (f: (s: OpenLoopSample) => number) =>
      complete.reduce((n, s) => n + f(s), 0) / complete.length;
    const parts: [string, number][] = [['client send lag', mean((s) => s.sent - s.planned)]];
    let previous = (s: OpenLoopSample) => s.sent;
    for (const [mark, label] of STEPS) {
      const before = previous;
      parts.push([label, mean((s) => marks.get(s.id)![mark]! - before(s))]);
      previous = (s) => marks.get(s.id)![mark]!;
    }
    parts.push(['gateway → client', mean((s) => s.done - previous(s))]);
    const total = mean((s) => s.latency);
    return (
      `  ${name} (${complete.length} of ${group.length} requests, mean ${total.toFixed(2)} ms): ` +
      parts.map(([label, ms]) => `${label} ${ms.toFixed(2)}`).join(', ') +
      '\n'
    );
  };
  return describe('p45–p55', band(0.45, 0.55)) + describe('slowest 1 %', band(0.99, 1));
}

/** Event-loop delay and utilisation of gateway and verify during one stack round (bench/probe.cjs). */
function loopReport(dir: string, round: number): string {
  return readdirSync(dir)
    .filter((f) => f.endsWith(`-${round}.loop.json`))
    .map((f) => {
      const r = JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as {
        service: string;
        utilisation: number;
        delay_ms: { p50: number; p99: number; max: number; mean: number };
        heap_mb: number;
        gc?: { kinds: Record<string, { count: number; total_ms: number; max_ms: number }> };
      };
      const kinds = Object.entries(r.gc?.kinds ?? {});
      const gc = !r.gc
        ? ''
        : kinds.length === 0
          ? ', no GC'
          : `, GC ${kinds.map(([kind, k]) => `${kind} ${k.count}× ${k.total_ms} ms (max ${k.max_ms})`).join(' ')}`;
      return `${r.service} busy ${(r.utilisation * 100).toFixed(0)}%, delay p50 ${r.delay_ms.p50} ms p99 ${r.delay_ms.p99} ms max ${r.delay_ms.max} ms${gc}`;
    })
    .join('; ');
}

/** CPU time (utime + stime from /proc) each process used between start and stop, as % of one core. */
/** The local Redis and RabbitMQ servers, when they run on this machine, so their share per request shows too. */
function brokerPids(): Record<string, number> {
  const found: Record<string, number> = {};
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const comm = readFileSync(`/proc/${entry}/comm`, 'utf8').trim();
      if (comm === 'redis-server') found.redis = Number(entry);
      if (comm === 'beam.smp') found.rabbitmq = Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

function cpuSampler(pids: Record<string, number>) {
  const started = performance.now();
  const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuTicks(pid)]));
  const waitedBefore = Object.fromEntries(
    Object.entries(pids).map(([name, pid]) => [name, runQueueWaitNs(pid)]),
  );
  const total = (leaveOut: string[]) =>
    Object.entries(pids).reduce((sum, [name, pid]) => {
      if (leaveOut.includes(name)) return sum;
      const [user, sys] = cpuTicks(pid).map((t, i) => t - before[name]![i]!);
      return sum + user! + sys!;
    }, 0);
  return {
    /** CPU of every process sampled but `leaveOut` (the load generator), summed, per request (µs), from the start until now. */
    totalUsPerRequest: (rps: number, leaveOut: string[] = []) => {
      const seconds = (performance.now() - started) / 1000;
      return (total(leaveOut) / 100 / seconds / rps) * 1e6;
    },
    stop: (rps: number) => {
      const seconds = (performance.now() - started) / 1000;
      return Object.entries(pids)
        .map(([name, pid]) => {
          const [user, sys] = cpuTicks(pid).map((t, i) => (t - before[name]![i]!) / 100 / seconds);
          const perReq = (share: number) => ((share / rps) * 1e6).toFixed(0);
          const waited = (runQueueWaitNs(pid) - waitedBefore[name]!) / 1e6 / seconds;
          return `${name} ${((user! + sys!) * 100).toFixed(0)}% ${perReq(user! + sys!)} µs/req (user ${perReq(user!)}, sys ${perReq(sys!)}, run-queue wait ${waited.toFixed(0)} ms/s)`;
        })
        .join(', ');
    },
  };
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
