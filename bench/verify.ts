/**
 * `npm run bench:verify` — POST /v1/verify through the gateway on the full stack (five processes,
 * real Redis and RabbitMQ, two hops), against a bare express app and a raw node:http server
 * answering the same JSON, in the same run on the same machine (load generator included).
 *
 * Many tenants, each with its own key and mandate, so plan rate limits are not what is measured.
 * Settings: BENCH_DURATION (s, default 10), BENCH_CONNECTIONS (default 32), BENCH_TENANTS (default 40).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import autocannon from 'autocannon';
import { internalTokens } from '@mandate/shared';
import { apiClient, startStack } from '../test/support/stack';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const TENANTS = Number(process.env.BENCH_TENANTS ?? 40);

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
  const stack = await startStack({ all: { LOG_LEVEL: 'warn' } });
  let results: Result[] = [];
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
    const express = await startBare('express');
    const http = await startBare('http');
    try {
      const bare = requests.map((r) => ({ ...r, headers: { 'content-type': 'application/json' } }));
      // Warm-up: JIT, keep-alive pools, key caches.
      await load('warm-up', stack.gateway.url, requests, 3);
      await load('warm-up', express.url, bare, 2);
      results = [
        await load('full stack (gateway → verify, Redis, RabbitMQ)', stack.gateway.url, requests),
        await load('bare express', express.url, bare),
        await load('raw node:http', http.url, bare),
      ];
    } finally {
      await stopChild(express.child);
      await stopChild(http.child);
    }
    const token = await internalTokens(stack.internalSecret).mint({ tenantId: null, actor: { type: 'system' }, permissions: [], requestId: 'req_bench' });
    const metrics = await (await fetch(`${stack.services.verify.url}/internal/v1/metrics`, { headers: { 'x-internal-token': token } })).json();
    process.stdout.write(`verify counters: ${JSON.stringify(metrics)}\n`);
  } finally {
    await stack.stop();
  }

  const [full, exp, raw] = results as [Result, Result, Result];
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
      `full stack / express: ${(full.rps / exp.rps).toFixed(2)}×   full stack / node:http: ${(full.rps / raw.rps).toFixed(2)}×   express / node:http: ${(exp.rps / raw.rps).toFixed(2)}×`,
      `targets: ratio ≥ 0.50× ${full.rps / exp.rps >= 0.5 ? 'MET' : 'MISSED'}, p99 ≤ 25 ms ${full.p99 <= 25 ? 'MET' : 'MISSED'}, zero non-2xx ${full.non2xx + full.errors === 0 ? 'MET' : 'MISSED'}`,
      '',
    ].join('\n'),
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
