/**
 * `npm run bench:audit-ingest` — audit's ingest through the real RabbitMQ, before and after the
 * tamper-evident log (docs/API.md#proving-the-log), each side in a process of its own, the sides
 * alternated round by round (docs/PERFORMANCE.md, "Tamper-evident log benchmark (issue 42)").
 *
 * Sides:
 * - `after`: this repository's audit consumer and memory store, with the log (what audit runs);
 * - `without`: the same code, the store built with `{ log: false }` (no seq, no leaf, no tree):
 *   what the log itself costs;
 * - `before`, with BENCH_BEFORE_TREE: the same files of another checkout with its own `npm ci`,
 *   the code before the log (`git archive 404d1e5 | tar -x -C ../before`, before the log's first
 *   commit): the ingest the goal compares with (with the log ≥ 0.80 of it);
 * - `compare`, with BENCH_COMPARE_TREE: another checkout with the log (a change's parent, say),
 *   to show what a change does.
 *
 * Every side drains the same BENCH_INGEST_EVENTS events (default 40,000; verifications in messages
 * of 100, as producers publish them), published into a queue of its own before its clock starts:
 * events/s from the consumer's start to the last event stored (and in its tenant's tree), and the
 * side process's CPU time per event. Each side's process drains once untimed (its JIT warm), then
 * BENCH_ROUNDS rounds (default 12), the order of the sides rotating each round; only one side
 * drains at a time. Ratios are taken within a round, then the median over the rounds. A side's
 * process runs only its own tree's modules, bundled as the images' are (bench/audit-ingest-side.ts).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import type { FromSide, RunResult, Side, ToSide } from './audit-ingest-side';

const root = path.resolve(__dirname, '..');

interface SideProcess {
  side: Side;
  proc: ChildProcess;
  run(namespace: string, messagesFile: string): Promise<RunResult>;
}

/**
 * The side process of a tree: bench/audit-ingest-side.ts and the tree's consumer, store and bus in
 * one bundle, made as `npm run build` makes the images' (esbuild, the npm dependencies left as
 * `require`s, which resolve in the tree's own node_modules, where the bundle is written).
 */
async function bundleSide(tree: string): Promise<string> {
  const shared = path.join(tree, 'packages/shared/src');
  // The shared package was one index before it was split by layer.
  const split = existsSync(path.join(shared, 'events/index.ts'));
  const module = (file: string) => JSON.stringify(path.join(tree, file));
  const dir = path.join(tree, 'node_modules/.cache/bench-audit-ingest');
  mkdirSync(dir, { recursive: true });
  const entry = path.join(dir, 'entry.ts');
  writeFileSync(
    entry,
    [
      `import { runSide } from ${JSON.stringify(path.join(root, 'bench/audit-ingest-side.ts'))};`,
      `import * as events from ${module(`packages/shared/src/${split ? 'events/index.ts' : 'index.ts'}`)};`,
      `import { createLogger } from ${module(`packages/shared/src/${split ? 'observability/index.ts' : 'index.ts'}`)};`,
      `import { MemoryEventStore } from ${module('services/audit/src/store/memory-event-store.ts')};`,
      `import { startAuditConsumer } from ${module('services/audit/src/consumers/audit-consumer.ts')};`,
      'runSide({ events, createLogger, MemoryEventStore, startAuditConsumer } as never);',
    ].join('\n'),
  );
  const { dependencies = {} } = JSON.parse(readFileSync(path.join(tree, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
  const outfile = path.join(dir, 'side.js');
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    external: ['amqplib', ...Object.keys(dependencies).flatMap((name) => [name, `${name}/*`])],
    logLevel: 'warning',
  });
  return outfile;
}

function startSide(side: Side, bundle: string): Promise<SideProcess> {
  const proc = fork(bundle, [side], {
    cwd: root,
    execArgv: ['--expose-gc'],
    env: { ...process.env, LOG_LEVEL: 'silent' },
  });
  let waiting: { resolve(message: FromSide): void; reject(err: Error): void } | undefined;
  proc.on('message', (message: FromSide) => waiting?.resolve(message));
  proc.on('exit', (code) => waiting?.reject(new Error(`${side}: process exited (${code})`)));
  const next = () =>
    new Promise<FromSide>((resolve, reject) => {
      waiting = { resolve, reject };
    });
  return next().then(() => ({
    side,
    proc,
    async run(namespace, messagesFile) {
      const answer = next();
      proc.send({ run: { namespace, messagesFile } } satisfies ToSide);
      const message = await answer;
      if ('error' in message) throw new Error(`${side}: ${message.error}`);
      if (!('result' in message)) throw new Error(`${side}: unexpected answer`);
      return message.result;
    },
  }));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const out = (line: string) => process.stdout.write(`${line}\n`);

/** A checkout named by an environment variable, with its own node_modules. */
function tree(variable: string): string | undefined {
  const dir = process.env[variable] ? path.resolve(process.env[variable]) : undefined;
  if (dir && !existsSync(path.join(dir, 'node_modules')))
    throw new Error(`${variable} ${dir} has no node_modules: run npm ci there first`);
  return dir;
}

/** The events every side drains: verifications over ten tenants, in messages of 100. */
async function messages(events: number): Promise<unknown[][]> {
  // This repository's modules, in the driver only: a side's process loads its own tree's.
  const { newId } = await import('@mandate/shared/core');
  const { verification } = await import('./audit-events');
  const tenants = Array.from({ length: 10 }, () => newId('tnt'));
  const batches: unknown[][] = [];
  for (let at = 0; at < events; at += 100)
    batches.push(
      Array.from({ length: Math.min(100, events - at) }, (_, i) =>
        verification(tenants[(at + i) % tenants.length]!, newId('mdt'), at + i),
      ),
    );
  return batches;
}

async function main(): Promise<void> {
  const EVENTS = Number(process.env.BENCH_INGEST_EVENTS ?? 40_000);
  const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 12);
  const before = tree('BENCH_BEFORE_TREE');
  const compare = tree('BENCH_COMPARE_TREE');
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-audit-ingest-'));
  const messagesFile = path.join(dir, 'messages.json');
  writeFileSync(messagesFile, JSON.stringify(await messages(EVENTS)));

  const sides: [Side, string][] = [
    ['after', root],
    ['without', root],
  ];
  if (before) sides.push(['before', before]);
  if (compare) sides.push(['compare', compare]);
  const bundles = new Map<string, string>();
  for (const [, tree] of sides) if (!bundles.has(tree)) bundles.set(tree, await bundleSide(tree));
  const procs = await Promise.all(sides.map(([side, tree]) => startSide(side, bundles.get(tree)!)));
  let runs = 0;
  const drain = (p: SideProcess) => p.run(`bench-ingest-${process.pid}-${runs++}`, messagesFile);
  out(
    `bench:audit-ingest — ${EVENTS.toLocaleString('en')} events per run, ${ROUNDS} rounds, Node ${process.version}; ` +
      `sides: ${sides.map(([side, tree]) => `${side} (${path.relative(root, tree) || '.'})`).join(', ')}`,
  );
  try {
    for (const p of procs) await drain(p); // warm-up
    const rounds: Map<Side, RunResult>[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const order = procs.map((_, i) => procs[(i + round) % procs.length]!);
      const got = new Map<Side, RunResult>();
      for (const p of order) got.set(p.side, await drain(p));
      rounds.push(got);
      const line = order.map(
        (p) => `${p.side} ${Math.round(got.get(p.side)!.perSecond).toLocaleString('en')}/s`,
      );
      const ratios = procs
        .filter((p) => p.side !== 'after')
        .map(
          (p) => `after ÷ ${p.side} ${(got.get('after')!.perSecond / got.get(p.side)!.perSecond).toFixed(2)}`,
        );
      out(`round ${round}: ${line.join(', ')}; ${ratios.join(', ')}`);
    }
    summarize(
      rounds,
      procs.map((p) => p.side),
    );
  } finally {
    for (const p of procs) p.proc.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Each side's medians, then each ratio to `after` by round: events/s, and CPU per event inverted. */
function summarize(rounds: Map<Side, RunResult>[], sides: Side[]): void {
  const range = (xs: number[]) =>
    `${median(xs).toFixed(2)} (rounds ${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`;
  for (const side of sides) {
    const rs = rounds.map((r) => r.get(side)!);
    out(
      `${side}: median ${Math.round(median(rs.map((r) => r.perSecond))).toLocaleString('en')} events/s, ` +
        `${median(rs.map((r) => r.cpuMicrosPerEvent)).toFixed(1)} µs of CPU per event`,
    );
  }
  for (const side of sides.filter((s) => s !== 'after')) {
    const throughput = rounds.map((r) => r.get('after')!.perSecond / r.get(side)!.perSecond);
    const cpu = rounds.map((r) => r.get(side)!.cpuMicrosPerEvent / r.get('after')!.cpuMicrosPerEvent);
    const atGoal =
      side === 'before'
        ? `, ${throughput.filter((x) => x >= 0.8).length} of ${throughput.length} rounds at or above 0.80`
        : '';
    out(`after ÷ ${side}: events/s ${range(throughput)}${atGoal}; by CPU per event ${range(cpu)}`);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
