/**
 * `npm run start:services`: the five services as separate processes (gateway, mandates, identity,
 * audit, and VERIFY_REPLICAS verify replicas) on the RabbitMQ, Redis and MongoDB the environment
 * names — the way they run in production, without Docker (`SERVICES_RUNTIME=dist` after
 * `npm run build`: the compiled JavaScript the images run). The end-to-end tests
 * (test/support/stack.ts) and the benchmark start their processes through `startServices` too, so
 * what they measure is what this script runs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import path from 'node:path';
import { redactUrl } from '@mandate/shared';

const ROOT = path.resolve(__dirname, '..');

export type ServiceName = 'gateway' | 'mandates' | 'verify' | 'identity' | 'audit';
type Backend = Exclude<ServiceName, 'gateway'>;

/** Defaults of `npm run start:services` when the variable is unset: the local RabbitMQ and Redis. */
export const LOCAL_AMQP_URL = 'amqp://guest:guest@127.0.0.1:5672';
export const LOCAL_REDIS_URL = 'redis://127.0.0.1:6379';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface ServiceProcess {
  name: string;
  url: string;
  child: ChildProcess;
  /** What the process wrote (stdout and stderr); only the last chunks when `onLine` is given. */
  output: string[];
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * What a service process runs: its TypeScript through tsx (development, the default), or the
 * JavaScript `npm run build` wrote into `distDir` (what the production images run).
 */
export type Runtime = { kind: 'tsx' } | { kind: 'dist'; distDir: string };

/** `SERVICES_RUNTIME=dist` selects the compiled services in ./dist (run `npm run build` first). */
export function runtimeFromEnv(value = process.env.SERVICES_RUNTIME): Runtime {
  if (value === undefined || value === '' || value === 'tsx') return { kind: 'tsx' };
  if (value === 'dist') return { kind: 'dist', distDir: path.join(ROOT, 'dist') };
  throw new Error(`SERVICES_RUNTIME must be tsx or dist, not ${value}`);
}

/** The node arguments that start service `name` under `runtime`. */
export function serviceArgs(name: ServiceName, runtime: Runtime): string[] {
  return runtime.kind === 'dist'
    ? ['--enable-source-maps', path.join(runtime.distDir, name, 'main.js')]
    : ['--import', 'tsx', path.join(ROOT, 'services', name, 'src', 'main.ts')];
}

export interface SpawnOptions {
  /** Default: SERVICES_RUNTIME from the environment, else tsx. */
  runtime?: Runtime;
  /** Called with every complete output line (the launcher prefixes it with the service's label). */
  onLine?: (label: string, line: string) => void;
  /** Own process group: a Ctrl-C in the terminal then reaches the launcher alone, which stops the services in order. */
  detached?: boolean;
}

/** Output kept for a long-running process, enough to say why it failed to start. */
const OUTPUT_TAIL = 200;

/** Starts one service as its own OS process, running its main.ts (or its bundle), and waits for /healthz. */
export async function startService(
  name: ServiceName,
  env: Record<string, string>,
  label: string = name,
  options: SpawnOptions = {},
): Promise<ServiceProcess> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const host = env.HOST ?? '127.0.0.1';
  const child = spawn(process.execPath, serviceArgs(name, options.runtime ?? runtimeFromEnv()), {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ...env, PORT: String(port), HOST: host },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  const output: string[] = [];
  const collect = (stream: NodeJS.ReadableStream) => {
    let partial = '';
    stream.on('data', (d: Buffer) => {
      const text = d.toString();
      output.push(text);
      if (!options.onLine) return;
      if (output.length > OUTPUT_TAIL) output.splice(0, output.length - OUTPUT_TAIL);
      const lines = (partial + text).split('\n');
      partial = lines.pop()!;
      for (const line of lines) options.onLine(label, line);
    });
    stream.on('end', () => {
      if (partial && options.onLine) options.onLine(label, partial);
    });
  };
  collect(child.stdout!);
  collect(child.stderr!);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  // Generous: on a loaded 2-core machine several stacks start at once, and tsx compiles each service.
  const deadline = Date.now() + 45_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${label} exited during start:\n${output.join('')}`);
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${label} did not become healthy:\n${output.join('')}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    name: label,
    url,
    child,
    output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

export interface ServicesOptions extends SpawnOptions {
  /** Every service's environment (AMQP_URL, REDIS_URL, INTERNAL_TOKEN_SECRET, …). */
  env: Record<string, string>;
  /** Per service, on top of `env` (the gateway's PORT, OPERATOR_TOKEN, …). */
  extra?: Partial<Record<ServiceName, Record<string, string>>>;
  /** How many verify processes (default 1); the gateway balances across them. */
  verifyReplicas?: number;
}

export interface Services {
  gateway: ServiceProcess;
  /** The first process of each service behind the gateway. */
  services: Record<Backend, ServiceProcess>;
  /** Every process of each service behind the gateway. */
  replicas: Record<Backend, ServiceProcess[]>;
  /** Every process, gateway first. */
  all: ServiceProcess[];
  /** Gateway first (no new work), then the services; resolves when every process has exited. */
  stop(): Promise<void>;
}

/** Starts identity, mandates and audit at once, then the verify replicas, then the gateway in front of them. */
export async function startServices(options: ServicesOptions): Promise<Services> {
  const { env, extra = {} } = options;
  // Every process started so far, so a failed start never leaves orphans behind.
  const started: ServiceProcess[] = [];
  const track = async (p: Promise<ServiceProcess>) => {
    const service = await p;
    started.push(service);
    return service;
  };
  const spawnOne = (name: ServiceName, own: Record<string, string>, label?: string) =>
    track(startService(name, { ...env, ...own, ...extra[name] }, label, options));
  try {
    // The evidence export (audit) reads from mandates: its port is chosen up front so both start at once.
    const mandatesPort = extra.mandates?.PORT ?? String(await freePort());
    const mandatesUrl = `http://127.0.0.1:${mandatesPort}`;
    // Mandates binds identity verifications through identity: its port is chosen up front too.
    const identityPort = extra.identity?.PORT ?? String(await freePort());
    const [identity, mandates, audit] = await Promise.all([
      spawnOne('identity', { PORT: identityPort }),
      spawnOne('mandates', { PORT: mandatesPort, IDENTITY_URL: `http://127.0.0.1:${identityPort}` }),
      spawnOne('audit', { MANDATES_URL: mandatesUrl }),
    ]);
    const count = options.verifyReplicas ?? 1;
    const verifyReplicas = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        spawnOne('verify', { MANDATES_URL: mandatesUrl }, count === 1 ? 'verify' : `verify-${i + 1}`),
      ),
    );
    const gateway = await spawnOne('gateway', {
      MANDATES_URL: mandates.url,
      VERIFY_URL: verifyReplicas.map((v) => v.url).join(','),
      IDENTITY_URL: identity.url,
      AUDIT_URL: audit.url,
    });
    const replicas = { identity: [identity], mandates: [mandates], audit: [audit], verify: verifyReplicas };
    return {
      gateway,
      services: { identity, mandates, audit, verify: verifyReplicas[0]! },
      replicas,
      all: [gateway, ...Object.values(replicas).flat()],
      async stop() {
        await gateway.stop();
        await Promise.all(
          Object.values(replicas)
            .flat()
            .map((s) => s.stop()),
        );
      },
    };
  } catch (err) {
    await Promise.all(started.map((s) => s.stop('SIGKILL')));
    throw err;
  }
}

/** Only what a service reads: the launcher's own settings and the gateway's PORT/HOST stay out of the others. */
function inheritedEnv(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !['PORT', 'HOST', 'VERIFY_REPLICAS', 'SERVICES_RUNTIME'].includes(k)) out[k] = v;
  }
  return out;
}

async function main(): Promise<void> {
  const replicas = Number(process.env.VERIFY_REPLICAS ?? 2);
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > 16) {
    process.stderr.write('config error: VERIFY_REPLICAS must be a whole number between 1 and 16\n');
    process.exit(1);
  }
  // 43 characters: well above the 32 a service demands of its secrets outside embedded mode.
  const generatedOperatorToken = process.env.OPERATOR_TOKEN
    ? undefined
    : randomBytes(32).toString('base64url');
  // Mandates as its own process refuses to start without a signing key: one for this run when none is set.
  const generatedSigningKey = [
    'LOCAL_SIGNING_KEY',
    'LOCAL_SIGNING_KEY_FILE',
    'KMS_KEY_ID',
    'SIGNING_KEY_IDS',
  ].some((name) => process.env[name])
    ? undefined
    : JSON.stringify(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }));
  const env: Record<string, string> = {
    ...inheritedEnv(),
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    AMQP_URL: process.env.AMQP_URL || LOCAL_AMQP_URL,
    REDIS_URL: process.env.REDIS_URL || LOCAL_REDIS_URL,
    // One secret for all five processes; a generated one lives as long as this launcher.
    INTERNAL_TOKEN_SECRET: process.env.INTERNAL_TOKEN_SECRET || randomBytes(32).toString('hex'),
  };
  let runtime: Runtime;
  try {
    runtime = runtimeFromEnv();
  } catch (err) {
    process.stderr.write(`config error: ${(err as Error).message}\n`);
    process.exit(1);
  }
  const say = (line: string) => process.stdout.write(`[launcher] ${line}\n`);
  say(
    `starting${runtime.kind === 'dist' ? ' the compiled' : ''} gateway, mandates, identity, audit and ${replicas} verify process(es) on RabbitMQ ${redactUrl(env.AMQP_URL!)}, ` +
      `Redis ${redactUrl(env.REDIS_URL!)}, ${env.MONGO_URL ? `MongoDB ${redactUrl(env.MONGO_URL)}` : 'in-memory stores (no MONGO_URL: data is lost when a process stops)'}`,
  );
  let stopping = false;
  let running: Services | undefined;
  const stopAll = async (code: number) => {
    if (stopping) return;
    stopping = true;
    say('stopping every service');
    await running?.stop();
    say(`stopped (exit ${code})`);
    process.exit(code);
  };
  // `on`, not `once`: a Ctrl-C under `npm run` arrives twice (the terminal's and tsx's relay), and a
  // second signal without a handler would kill the launcher half-way through stopping.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void stopAll(0));
  try {
    running = await startServices({
      env,
      extra: {
        ...(generatedSigningKey ? { mandates: { LOCAL_SIGNING_KEY: generatedSigningKey } } : {}),
        gateway: {
          PORT: process.env.PORT ?? '8080',
          HOST: process.env.HOST ?? '127.0.0.1',
          OPERATOR_TOKEN: process.env.OPERATOR_TOKEN || generatedOperatorToken!,
        },
      },
      verifyReplicas: replicas,
      runtime,
      detached: true,
      onLine: (label, line) => process.stdout.write(`[${label}] ${line}\n`),
    });
  } catch (err) {
    process.stderr.write(`[launcher] ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
  const services = running;
  // Should this process end any other way (an uncaught error), its detached children must not outlive it.
  process.once('exit', () =>
    services.all.forEach((p) => p.child.exitCode === null && p.child.kill('SIGTERM')),
  );
  // One process gone means the product is broken: stop the others and say so in the exit code.
  for (const p of services.all) {
    p.child.once('exit', (code, signal) => {
      if (stopping) return;
      say(`${p.name} exited (${signal ?? `code ${code}`}); stopping the others`);
      void stopAll(1);
    });
  }
  for (const p of services.all) say(`${p.name} pid ${p.child.pid} ${p.url}`);
  say(
    `API: ${services.gateway.url}   (walk-through: README.md, "API walk-through"; OpenAPI: ${services.gateway.url}/v1/openapi.json)`,
  );
  if (generatedOperatorToken)
    say(`operator token (shown once): export OPERATOR_TOKEN=${generatedOperatorToken}`);
  if (generatedSigningKey)
    say(
      'mandates signs with a key generated for this run (set LOCAL_SIGNING_KEY_FILE to keep one across runs)',
    );
  say('Ctrl-C stops every service');
}

if (require.main === module) void main();
