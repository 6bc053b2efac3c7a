/**
 * `npm run bench:cold-start` — how long each service takes from process spawn to its first
 * `/healthz` 200, compiled (`node dist/<service>/main.js`, what the images run; `npm run build`
 * first) against `node --import tsx src/main.ts`, BENCH_RUNS times each (default 5), one process
 * at a time on the local RabbitMQ and Redis (AMQP_URL, REDIS_URL), in a namespace of its own that
 * is deleted afterwards.
 *
 * tsx is measured twice: with an empty compile cache (a fresh TMPDIR per run, as in a new
 * container whose /tmp is an empty volume) and with the cache of the previous run.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { newId } from '@mandate/shared/core';
import { SERVICES } from '../scripts/build';
import { freePort, serviceArgs, type Runtime, type ServiceName } from '../scripts/services';
import { AMQP_URL, REDIS_URL, deleteRedisKeys, deleteTopology } from '../test/support/stack';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const ROOT = path.resolve(__dirname, '..');
const DIST = path.join(ROOT, 'dist');
/** Fine enough for starts of a few hundred milliseconds. */
const POLL_MS = 5;

const namespace = `bench-cold-${newId('req')}`;
const env: Record<string, string> = {
  PATH: process.env.PATH ?? '',
  LOG_LEVEL: 'warn',
  HOST: '127.0.0.1',
  AMQP_URL,
  REDIS_URL,
  AMQP_NAMESPACE: namespace,
  REDIS_PREFIX: `${namespace}:`,
  INTERNAL_TOKEN_SECRET: randomBytes(32).toString('hex'),
  OPERATOR_TOKEN: randomBytes(32).toString('base64url'),
  // Upstreams that never answer: /healthz is liveness and does not call them.
  MANDATES_URL: 'http://127.0.0.1:9',
  VERIFY_URL: 'http://127.0.0.1:9',
  IDENTITY_URL: 'http://127.0.0.1:9',
  AUDIT_URL: 'http://127.0.0.1:9',
};

/** Milliseconds from spawn to the first /healthz 200; the process is stopped afterwards. */
async function coldStart(name: ServiceName, runtime: Runtime, extraEnv: Record<string, string> = {}) {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, serviceArgs(name, runtime), {
    cwd: ROOT,
    env: { ...env, ...extraEnv, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${name} exited during start:\n${stderr}`);
      try {
        if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return performance.now() - started;
      } catch {
        // not listening yet
      }
      if (performance.now() - started > 30_000) throw new Error(`${name} did not start in 30 s`);
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (x: number) => `${Math.round(x)} ms`;

async function main(): Promise<void> {
  if (!existsSync(path.join(DIST, 'gateway', 'main.js'))) {
    process.stderr.write('no dist/: run `npm run build` first\n');
    process.exit(1);
  }
  process.stdout.write(
    `cold start, spawn → /healthz 200, median of ${RUNS} runs (min–max), Node ${process.version}\n\n`,
  );
  process.stdout.write('| service | compiled (dist) | tsx, empty cache | tsx, warm cache |\n');
  process.stdout.write('|---|---|---|---|\n');
  try {
    for (const name of SERVICES) {
      const compiled: number[] = [];
      const tsxCold: number[] = [];
      const tsxWarm: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        // Also where verify keeps its event spool, so nothing is left behind.
        const tmp = mkdtempSync(path.join(tmpdir(), 'bench-cold-'));
        try {
          compiled.push(await coldStart(name, { kind: 'dist', distDir: DIST }, { TMPDIR: tmp }));
          tsxCold.push(await coldStart(name, { kind: 'tsx' }, { TMPDIR: tmp }));
          tsxWarm.push(await coldStart(name, { kind: 'tsx' }, { TMPDIR: tmp }));
        } finally {
          rmSync(tmp, { recursive: true, force: true });
        }
      }
      const cell = (xs: number[]) => `${ms(median(xs))} (${ms(Math.min(...xs))}–${ms(Math.max(...xs))})`;
      process.stdout.write(`| ${name} | ${cell(compiled)} | ${cell(tsxCold)} | ${cell(tsxWarm)} |\n`);
    }
  } finally {
    await deleteTopology(namespace).catch(() => undefined);
    await deleteRedisKeys(`${namespace}:*`);
  }
}

void main();
