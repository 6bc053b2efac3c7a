/**
 * `npm run bench:verify` — POST /v1/verify through the gateway on the full stack (five processes,
 * real Redis and RabbitMQ, two hops), against a bare express app and a raw node:http server
 * answering the same JSON, in the same run on the same machine (load generator included).
 *
 * Many tenants, each with its own key and mandate, so plan rate limits are not what is measured.
 * Settings: BENCH_DURATION (s, default 10), BENCH_CONNECTIONS (default 32), BENCH_TENANTS (default 40),
 * BENCH_WARMUP (s of load on the stack before measuring, default 10),
 * BENCH_ONLY=stack (skip the two baselines, for quick iterations), BENCH_PROFILE=<dir> (gateway and
 * verify write V8 CPU profiles of the measured load there; read them with `tsx bench/profile-top.ts <file>`),
 * BENCH_NODE_OPTIONS (passed to gateway and verify, e.g. `--perf-basic-prof` for `perf record -p <pid>`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';
import { internalTokens } from '@mandate/shared';
import { apiClient, startStack } from '../test/support/stack';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const TENANTS = Number(process.env.BENCH_TENANTS ?? 40);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 10);
const ONLY_STACK = process.env.BENCH_ONLY === 'stack';
const PROFILE_DIR = process.env.BENCH_PROFILE;

interface Result {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

async function load(name: string, url: string, requests: autocannon.Request[], duration = DURATION): Promise<Result> {
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
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'bare-server.ts'), kind], {
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

async function main() {
  process.stdout.write(`bench:verify — ${DURATION}s per target, ${CONNECTIONS} connections, ${TENANTS} tenants\n`);
  // BENCH_NODE_OPTIONS (e.g. --perf-basic-prof, for `perf record -p <pid>`) reaches gateway and verify.
  const nodeOptions = [process.env.BENCH_NODE_OPTIONS ?? '', PROFILE_DIR ? `--require ${path.join(__dirname, 'cpu-profile.cjs')}` : ''].join(' ').trim();
  const profile: Record<string, string> = {
    ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
    ...(PROFILE_DIR ? { BENCH_PROFILE_DIR: PROFILE_DIR } : {}),
  };
  const stack = await startStack({ all: { LOG_LEVEL: 'warn' }, gateway: profile, verify: profile });
  const results: Result[] = [];
  try {
    const api = apiClient(stack.gateway.url);
    const requests: autocannon.Request[] = [];
    for (let i = 0; i < TENANTS; i++) {
      const t = await api('POST', '/v1/platform/tenants', { auth: stack.operatorToken, body: { name: `bench ${i}`, plan: 'enterprise' } });
      if (t.status !== 201) throw new Error(`tenant: ${t.status} ${t.text}`);
      const auth = `Bearer ${t.body.tenant.id}:${t.body.api_key.api_key}`;
      const m = await api('POST', '/v1/mandates', {
        auth: auth.slice(7),
        body: { principal: 'user_alice', delegate: 'agent_bob', scope: { actions: ['payments:*'], constraints: { max_amount: 50_000, currency: 'EUR' } } },
      });
      if (m.status !== 201) throw new Error(`mandate: ${m.status} ${m.text}`);
      requests.push({
        method: 'POST',
        path: '/v1/verify',
        headers: { authorization: auth, 'content-type': 'application/json' },
        body: JSON.stringify({ mandate_id: m.body.id, action: 'payments:create', amount: 1200, currency: 'EUR' }),
      });
    }
    const bare = requests.map((r) => ({ ...r, headers: { 'content-type': 'application/json' } }));
    // Warm-up: keep-alive pools, key caches, and the JIT — two processes with express, undici, ioredis,
    // amqplib and zod take ~10 s of load on 2 cores before V8 stops optimising (a shorter warm-up
    // measured the compiler, not the stack).
    await load('warm-up', stack.gateway.url, requests, WARMUP);
    const pids = { gateway: stack.gateway.child.pid!, verify: stack.services.verify.child.pid! };
    const profiling = () => PROFILE_DIR && Object.values(pids).forEach((pid) => process.kill(pid, 'SIGUSR2'));
    profiling();
    const cpu = cpuSampler({ ...pids, audit: stack.services.audit.child.pid!, autocannon: process.pid, ...brokerPids() });
    const full = await load('full stack (gateway → verify, Redis, RabbitMQ)', stack.gateway.url, requests);
    results.push(full);
    process.stdout.write(`CPU during the full-stack load (% of one core, and per request): ${cpu.stop(full.rps)}\n`);
    profiling();
    if (!ONLY_STACK) {
      const express = await startBare('express');
      const http = await startBare('http');
      try {
        await load('warm-up', express.url, bare, 3);
        for (const [name, target] of [['bare express', express], ['raw node:http', http]] as const) {
          const sampler = cpuSampler({ [name]: target.child.pid!, autocannon: process.pid });
          const r = await load(name, target.url, bare);
          results.push(r);
          process.stdout.write(`CPU during the ${name} load: ${sampler.stop(r.rps)}\n`);
        }
      } finally {
        await stopChild(express.child);
        await stopChild(http.child);
      }
    }
    const token = await internalTokens(stack.internalSecret).mint({ tenantId: null, actor: { type: 'system' }, permissions: [], requestId: 'req_bench' });
    const metrics = await (await fetch(`${stack.services.verify.url}/internal/v1/metrics`, { headers: { 'x-internal-token': token } })).json();
    process.stdout.write(`verify counters: ${JSON.stringify(metrics)}\n`);
  } finally {
    await stack.stop();
  }

  const [full, exp = full, raw = full] = results as [Result, Result?, Result?];
  const rows = results.map(
    (r) =>
      `| ${r.name.padEnd(48)} | ${r.rps.toFixed(0).padStart(7)} | ${String(r.p50).padStart(4)} ms | ${String(r.p99).padStart(4)} ms | ${String(r.non2xx + r.errors).padStart(6)} |`,
  );
  process.stdout.write(
    [
      '',
      `| ${'target'.padEnd(48)} |   req/s |     p50 |     p99 | non-2xx/err |`,
      `|${'-'.repeat(50)}|---------|---------|---------|--------|`,
      ...rows,
      '',
      ...(results.length < 3 ? [] : [`full stack / express: ${(full.rps / exp.rps).toFixed(2)}×   full stack / node:http: ${(full.rps / raw.rps).toFixed(2)}×   express / node:http: ${(exp.rps / raw.rps).toFixed(2)}×`,
      `targets: ratio ≥ 0.50× ${full.rps / exp.rps >= 0.5 ? 'MET' : 'MISSED'}`]),
      `targets: p99 ≤ 25 ms ${full.p99 <= 25 ? 'MET' : 'MISSED'}, zero non-2xx ${full.non2xx + full.errors === 0 ? 'MET' : 'MISSED'}`,
      '',
    ].join('\n'),
  );
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
  // utime and stime in clock ticks (USER_HZ, 100 on Linux).
  const ticks = (pid: number): [number, number] => {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return [Number(fields[11]), Number(fields[12])];
    } catch {
      return [NaN, NaN];
    }
  };
  const started = performance.now();
  const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, ticks(pid)]));
  return {
    stop: (rps: number) => {
      const seconds = (performance.now() - started) / 1000;
      return Object.entries(pids)
        .map(([name, pid]) => {
          const [user, sys] = ticks(pid).map((t, i) => (t - before[name]![i]!) / 100 / seconds);
          const perReq = (share: number) => ((share / rps) * 1e6).toFixed(0);
          return `${name} ${((user! + sys!) * 100).toFixed(0)}% ${perReq(user! + sys!)} µs/req (user ${perReq(user!)}, sys ${perReq(sys!)})`;
        })
        .join(', ');
    },
  };
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
