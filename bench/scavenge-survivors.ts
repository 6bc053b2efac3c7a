/**
 * `npm run bench:scavenge-survivors` — what a per-object map costs the young generation
 * (docs/PERFORMANCE.md, "Round 17: what each scavenge copied (issue 35)"; docs/DECISIONS.md,
 * "What may outlive a request"). Each case
 * makes 300,000 short-lived objects, each pointing at 20 small ones (a request's worth of
 * garbage), in a node process of its own run with `--trace-gc-nvp`, and reports its last 20
 * scavenges: the mean pause, and the share of what was allocated that survived (was copied).
 *
 * - `class`: a class instance: every object shares one map.
 * - `literal getter`: an object literal with a getter (a new closure per object, as a service
 *   client's reader watch had).
 * - `defineProperty getter`: `Object.defineProperty(this, 'length', { get })` with a new closure
 *   per object (ioredis's Pipeline).
 * - `shared getter`: the same defineProperty, one getter function for all.
 *
 * Then the same figures for an HTTP server under 500 requests/s (bench/open-loop.ts) for
 * BENCH_DURATION seconds (default 8, after 2 of warm-up): node:http alone; node:http changing each
 * request's and answer's prototype (as express does); express on node:http; and express served by
 * the services' own `listen` (packages/shared/src/http/server.ts), which makes its requests and
 * answers with its prototypes.
 * A plain object whose prototype changes does not show it; node's request objects do.
 *
 * Settings: BENCH_OBJECTS (default 300,000), BENCH_DURATION.
 */
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { openLoop } from './open-loop';

const OBJECTS = Number(process.env.BENCH_OBJECTS ?? 300_000);
const DURATION = Number(process.env.BENCH_DURATION ?? 8);

const CASES: Record<string, string> = {
  class: `class C { constructor(p) { this.payload = p; } } const make = (p) => new C(p);`,
  'literal getter': `const make = (p) => { let gone = false; return { payload: p, get gone() { return gone; } }; };`,
  'defineProperty getter': `class C { constructor(p) { this.payload = p; const self = this;
    Object.defineProperty(this, 'length', { get() { return self.payload.length; } }); } }
    const make = (p) => new C(p);`,
  'shared getter': `function length() { return this.payload.length; }
    class C { constructor(p) { this.payload = p; Object.defineProperty(this, 'length', { get: length }); } }
    const make = (p) => new C(p);`,
};

const LISTEN = path.join(__dirname, '..', 'packages', 'shared', 'src', 'http', 'server.ts');
const LISTENING = `(port) => console.log('listening ' + port)`;
const onNodeHttp = (server: string) =>
  `${server}; server.keepAliveTimeout = 65000;
    server.listen(0, '127.0.0.1', () => (${LISTENING})(server.address().port));`;

/** Each server's program: it prints `listening <port>` once it listens. */
const SERVERS: Record<string, string> = {
  'node:http': onNodeHttp(`const handler = (req, res) => { req.resume(); res.end('{}'); };
    const server = http.createServer(handler)`),
  'node:http, prototypes changed': onNodeHttp(`
    const reqProto = Object.create(http.IncomingMessage.prototype);
    const resProto = Object.create(http.ServerResponse.prototype);
    const handler = (req, res) => {
      Object.setPrototypeOf(req, reqProto); Object.setPrototypeOf(res, resProto);
      req.resume(); res.end('{}');
    };
    const server = http.createServer(handler)`),
  'express on node:http': onNodeHttp(`const app = require('express')();
    app.post('/', (req, res) => { req.resume(); res.end('{}'); });
    const server = http.createServer(app)`),
  'express through listen': `const app = require('express')();
    app.post('/', (req, res) => { req.resume(); res.end('{}'); });
    require(${JSON.stringify(LISTEN)}).listen(app, 0).then((running) => (${LISTENING})(running.port));`,
};

function summary(name: string, trace: string): string {
  const scavenges = trace
    .split('\n')
    .filter((line) => line.includes('gc=s '))
    .slice(-20)
    .map((line) => {
      const field = (key: string) => Number(new RegExp(` ${key}=([\\d.]+)`).exec(line)?.[1] ?? NaN);
      return { pause: field('pause'), allocated: field('allocated'), survived: field('new_space_survived') };
    });
  const sum = (key: 'pause' | 'allocated' | 'survived') => scavenges.reduce((a, s) => a + s[key], 0);
  const pause = sum('pause') / scavenges.length;
  const survived = (100 * sum('survived')) / sum('allocated');
  return `| ${name} | ${scavenges.length} | ${pause.toFixed(2)} ms | ${survived.toFixed(1)} % |`;
}

async function serve(name: string, setup: string): Promise<string> {
  const program = `const http = require('node:http'); ${setup}`;
  // tsx: `listen` is the services' TypeScript.
  const child = spawn(process.execPath, ['--trace-gc-nvp', '--import', 'tsx', '-e', program], {
    cwd: path.join(__dirname, '..'),
  });
  let trace = '';
  child.stdout.setEncoding('utf8');
  const port = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${name}: exited with ${code}`)));
    child.stdout.on('data', (chunk: string) => {
      trace += chunk;
      const match = /listening (\d+)/.exec(trace);
      if (match) resolve(match[1]!);
    });
  });
  const requests = [
    { method: 'POST' as const, path: '/', headers: { 'content-type': 'application/json' }, body: '{}' },
  ];
  await openLoop(`http://127.0.0.1:${port}`, requests, 500, 2);
  trace = '';
  const result = await openLoop(`http://127.0.0.1:${port}`, requests, 500, DURATION);
  child.kill();
  return `${summary(name, trace)} ${result.p99} ms |`;
}

function run(name: string, setup: string): string {
  const program = `${setup}
    let sink = 0;
    for (let i = 0; i < ${OBJECTS}; i++) {
      const o = make(Array.from({ length: 20 }, () => ({ a: 1, b: 'x' })));
      sink += o.payload.length;
    }
    if (sink < 0) console.log(sink);`;
  const child = spawnSync(process.execPath, ['--trace-gc-nvp', '-e', program], { encoding: 'utf8' });
  if (child.status !== 0) throw new Error(`${name}: ${child.stderr}`);
  return summary(name, child.stdout);
}

async function main(): Promise<void> {
  process.stdout.write(`bench:scavenge-survivors — ${OBJECTS} objects per case, the last 20 scavenges\n\n`);
  process.stdout.write('| objects | scavenges | mean pause | allocated that survived |\n|---|---|---|---|\n');
  for (const [name, setup] of Object.entries(CASES)) process.stdout.write(`${run(name, setup)}\n`);
  process.stdout.write(`\nHTTP servers at 500 requests/s for ${DURATION} s, the last 20 scavenges\n\n`);
  process.stdout.write(
    '| server | scavenges | mean pause | allocated that survived | p99 |\n|---|---|---|---|---|\n',
  );
  for (const [name, setup] of Object.entries(SERVERS)) process.stdout.write(`${await serve(name, setup)}\n`);
}

main().catch((err) => {
  process.stderr.write(`bench:scavenge-survivors failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
