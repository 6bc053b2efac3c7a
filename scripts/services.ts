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
import { readdir, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { ConfigError, redactUrl } from '@mandate/shared/core';
import { readableLogLine } from '@mandate/shared/observability';
import { defaultSpoolDir } from '@mandate/shared/events';
import { DRAIN_TIMEOUT_MS, ListenError, assertCanListen } from '@mandate/shared/http';
import { localWallet } from './local-wallet';

const ROOT = path.resolve(__dirname, '..');

export type ServiceName = 'gateway' | 'mandates' | 'verify' | 'identity' | 'audit';
type Backend = Exclude<ServiceName, 'gateway'>;

/** Defaults of `npm run start:services` when the variable is unset: the local RabbitMQ and Redis. */
export const LOCAL_AMQP_URL = 'amqp://guest:guest@127.0.0.1:5672';
export const LOCAL_REDIS_URL = 'redis://127.0.0.1:6379';

/** Below Linux's ephemeral range (32768–60999), so no outgoing connection takes one of these ports. */
const WORKER_PORTS_BASE = 20_000;
const PORTS_PER_WORKER = 700;
/**
 * Where this run starts in its worker's block: taken from the jest parent's pid, so two runs on
 * one machine at once (a developer's and a helper's) probe different ports of the same block
 * instead of the same ones in the same order.
 */
let nextWorkerPort = (process.ppid * 7_919) % PORTS_PER_WORKER;

/**
 * A port nothing listens on, for a service about to start. A port is only known free until someone
 * binds it, and a service binds it seconds later (tsx compiles it first): under jest, parallel
 * workers starting stacks at once were handed the same OS-chosen port, and the service that lost
 * the race left the other stack's process answering its /healthz — the test then talked to another
 * stack (a 401 "Missing internal token" from a service where it expected the gateway). So each jest
 * worker takes ports from its own block, in turn, and no two workers can be handed the same one.
 * Outside jest the OS chooses.
 */
export async function freePort(): Promise<number> {
  const worker = Number(process.env.JEST_WORKER_ID);
  if (Number.isInteger(worker) && worker > 0) {
    const block = WORKER_PORTS_BASE + ((worker - 1) % 16) * PORTS_PER_WORKER;
    for (let tries = 0; tries < PORTS_PER_WORKER; tries++) {
      const port = block + (nextWorkerPort++ % PORTS_PER_WORKER);
      if (await bindable(port)) return port;
    }
  }
  const port = await bindable(0);
  if (port === false) throw new Error('no free port on 127.0.0.1');
  return port;
}

/** Binds `port` on loopback and lets it go: the port it got, or false when it is taken. */
function bindable(port: number): Promise<number | false> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => {
      const bound = (srv.address() as { port: number }).port;
      srv.close(() => resolve(bound));
    });
  });
}

export interface ServiceProcess {
  name: string;
  /** Which service it runs (`name` is its label: `verify-2`, `mandates (restarted)`). */
  service?: ServiceName;
  url: string;
  child: ChildProcess;
  /** The environment it was started with (PORT included): a restart on the same port takes it again. */
  env: Record<string, string>;
  /** What the process wrote (stdout and stderr); only the last chunks when `onLine` is given. */
  output: string[];
  /** Resolves with the exit code (null when a signal ended it) once the process has exited. */
  exited: Promise<number | null>;
  /**
   * Sends `signal` (to the whole process group when spawned detached), then SIGKILL once `graceMs`
   * has passed, and resolves when the process has exited.
   */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<number | null>;
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
  throw new Error(`SERVICES_RUNTIME: must be tsx or dist (after npm run build), not ${value}`);
}

/**
 * V8 flags a service always runs with, here as in its image's CMD (Dockerfile; a test holds the two
 * equal). The request path's processes do not pretenure: V8 moved their per-request objects'
 * allocation sites to the old generation after a burst, and those objects, dead there until the
 * next full collection, kept every request they pointed to alive through the scavenges
 * (docs/PERFORMANCE.md, "Round 17: what each scavenge copied (issue 35)").
 */
export const SERVICE_V8_FLAGS: Readonly<Record<ServiceName, readonly string[]>> = {
  gateway: ['--no-allocation-site-pretenuring'],
  verify: ['--no-allocation-site-pretenuring'],
  mandates: [],
  identity: [],
  audit: [],
};

/** The node arguments that start service `name` under `runtime`. */
export function serviceArgs(name: ServiceName, runtime: Runtime): string[] {
  // SERVICE_NODE_FLAGS: node flags NODE_OPTIONS refuses (V8's GC flags, say) for A/B runs of a setting;
  // after the service's own, so `--allocation-site-pretenuring` there turns pretenuring back on.
  const flags = (process.env.SERVICE_NODE_FLAGS ?? '').split(' ').filter(Boolean);
  return [...SERVICE_V8_FLAGS[name], ...flags, ...serviceEntry(name, runtime)];
}
function serviceEntry(name: ServiceName, runtime: Runtime): string[] {
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
  /**
   * Called as soon as a process exists, before it is healthy: whoever started it can then stop it
   * whatever happens next (a failed start, a signal, an exception).
   */
  onSpawn?: (process: ServiceProcess) => void;
}

/** Output kept for a long-running process, enough to say why it failed to start. */
const OUTPUT_TAIL = 200;
/**
 * How long a stopping service may take before it is killed: its drain (DRAIN_TIMEOUT_MS, requests in
 * flight finish) and then its flush (events, adapters), as Kubernetes' 30 s grace period allows
 * (docs/KUBERNETES.md, "What each component needs").
 */
export const STOP_GRACE_MS = DRAIN_TIMEOUT_MS + 10_000;

/** A process that started but did not become healthy; its message is one line. */
export class ServiceStartError extends Error {
  constructor(
    readonly label: string,
    reason: string,
    /** What it printed, for callers that did not see it line by line (`onLine`). */
    readonly output: string,
  ) {
    super(`${label} ${reason}`);
    this.name = 'ServiceStartError';
  }
}

function exitedAlready(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/** `signal` to the process, or to its whole group when it leads one (spawned detached). */
function signalProcess(child: ChildProcess, signal: NodeJS.Signals, group: boolean): void {
  try {
    if (group && child.pid !== undefined) process.kill(-child.pid, signal);
    else child.kill(signal);
  } catch {
    // already gone
  }
}

/** Keeps a process's output in `output` and, given `onLine`, hands on each whole line (the tail kept then). */
function collectOutput(
  stream: NodeJS.ReadableStream,
  output: string[],
  label: string,
  onLine: SpawnOptions['onLine'],
): void {
  let partial = '';
  stream.on('data', (d: Buffer) => {
    const text = d.toString();
    output.push(text);
    if (!onLine) return;
    if (output.length > OUTPUT_TAIL) output.splice(0, output.length - OUTPUT_TAIL);
    const lines = (partial + text).split('\n');
    partial = lines.pop()!;
    for (const line of lines) onLine(label, line);
  });
  stream.on('end', () => {
    if (partial && onLine) onLine(label, partial);
  });
}

/**
 * Spawns one service process on `env.PORT` (required) and returns at once. The process gets an
 * IPC channel: the service's runService stops when that channel closes, so it never outlives
 * whoever spawned it, even one killed with SIGKILL.
 */
export function spawnService(
  name: ServiceName,
  env: Record<string, string> & { PORT: string },
  label: string = name,
  options: SpawnOptions = {},
): ServiceProcess {
  const host = env.HOST ?? '127.0.0.1';
  const detached = options.detached ?? false;
  const child = spawn(process.execPath, serviceArgs(name, options.runtime ?? runtimeFromEnv()), {
    cwd: ROOT,
    // LAUNCHER_PID: the service stops once this process is gone (runService), even before it listens.
    env: {
      PATH: process.env.PATH ?? '',
      LOG_LEVEL: 'warn',
      ...env,
      HOST: host,
      LAUNCHER_PID: String(process.pid),
    },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    detached,
  });
  // The channel is how the child notices this process is gone; it must not keep this process alive.
  child.channel?.unref();
  const output: string[] = [];
  collectOutput(child.stdout!, output, label, options.onLine);
  collectOutput(child.stderr!, output, label, options.onLine);
  const exited = new Promise<number | null>((resolve) => {
    if (child.pid === undefined) child.once('error', () => resolve(null));
    child.once('exit', (code) => resolve(code));
  });
  const proc: ServiceProcess = {
    name: label,
    service: name,
    url: `http://127.0.0.1:${env.PORT}`,
    child,
    env,
    output,
    exited,
    async stop(signal = 'SIGTERM', graceMs = STOP_GRACE_MS) {
      if (!exitedAlready(child)) {
        signalProcess(child, signal, detached);
        const timer = setTimeout(() => signalProcess(child, 'SIGKILL', detached), graceMs);
        await exited;
        clearTimeout(timer);
      }
      // Anything the service itself started in its group goes with it.
      if (detached) signalProcess(child, 'SIGKILL', true);
      return child.exitCode;
    },
  };
  options.onSpawn?.(proc);
  return proc;
}

/**
 * Waits for the process's /healthz; throws a ServiceStartError if it exits or is not healthy in time.
 * A service that fails exits at once and is reported then; the deadline only bounds one that hangs.
 * It is generous because tsx compiles each service as it starts (identity: ~5 s of CPU), and on a
 * loaded 2-core machine several stacks start at once.
 */
export async function waitHealthy(proc: ServiceProcess, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exitedAlready(proc.child)) {
      const how = proc.child.signalCode ?? `code ${proc.child.exitCode}`;
      throw new ServiceStartError(proc.name, `exited during start (${how})`, proc.output.join(''));
    }
    try {
      // Bounded: something else on the port that accepts and never answers must not stall the start.
      const res = await fetch(`${proc.url}/healthz`, { signal: AbortSignal.timeout(5_000) });
      await res.arrayBuffer();
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline)
      throw new ServiceStartError(proc.name, 'did not become healthy', proc.output.join(''));
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Starts one service as its own OS process, running its main.ts (or its bundle), and waits for
 * /healthz; a process that does not get there is killed. The error holds what it printed unless
 * `onLine` already showed it.
 */
export async function startService(
  name: ServiceName,
  env: Record<string, string>,
  label: string = name,
  options: SpawnOptions = {},
): Promise<ServiceProcess> {
  const port = env.PORT ? env.PORT : String(await freePort());
  const proc = spawnService(name, { ...env, PORT: port }, label, options);
  try {
    // Generous: on a loaded 2-core machine several stacks start at once, and tsx compiles each service.
    await waitHealthy(proc);
  } catch (err) {
    await proc.stop('SIGKILL');
    if (err instanceof ServiceStartError && !options.onLine)
      throw new Error(`${err.message}:\n${err.output}`);
    throw err;
  }
  return proc;
}

/** How the launcher watches /livez (docs/DEPLOYMENT.md, "Liveness"), as a Kubernetes probe would. */
export interface LivenessWatch {
  /** Between two probes of one process (default 10 s). */
  intervalMs?: number;
  /** An answer slower than this counts as a failure (default 6 s: /livez bounds its checks at 5 s). */
  timeoutMs?: number;
  /** Failures in a row that restart the process (default 3). */
  failures?: number;
  /** Told one line per restart. */
  say?: (line: string) => void;
}

export interface LivenessSupervisor {
  /** The processes as they are now: a restarted one replaces its predecessor at the same index. */
  readonly processes: ServiceProcess[];
  /** Restarts done so far, oldest first. */
  readonly restarts: { name: string; oldPid?: number; newPid?: number }[];
  /** True while `proc` is being replaced (its exit is expected). */
  isRestarting(proc: ServiceProcess): boolean;
  stop(): void;
}

/**
 * Probes each process's /livez and restarts one that failed `failures` times in a row: stopped
 * (SIGTERM, then SIGKILL after 5 s: a stuck process may not flush), then spawned again with the
 * same environment (so the same port: the gateway's URLs stay right) and waited for until healthy.
 * `onRestart` is told the new process (the launcher watches its exit).
 */
export function superviseLiveness(
  processes: ServiceProcess[],
  spawnOptions: SpawnOptions,
  watch: LivenessWatch & { onRestart?: (fresh: ServiceProcess) => void } = {},
): LivenessSupervisor {
  const intervalMs = watch.intervalMs ?? 10_000;
  const timeoutMs = watch.timeoutMs ?? 6_000;
  const threshold = watch.failures ?? 3;
  const list = [...processes];
  const failed = new Map<ServiceProcess, number>();
  const restarting = new Set<ServiceProcess>();
  const restarts: LivenessSupervisor['restarts'] = [];
  let stopped = false;

  const restart = async (index: number, old: ServiceProcess) => {
    restarting.add(old);
    try {
      watch.say?.(`${old.name} restarted: /livez failed ${threshold} times`);
      await old.stop('SIGTERM', 5_000);
      if (stopped || !old.service) return;
      const fresh = spawnService(old.service, old.env as ServiceEnv, old.name, spawnOptions);
      list[index] = fresh;
      watch.onRestart?.(fresh);
      await waitHealthy(fresh);
      restarts.push({ name: old.name, oldPid: old.child.pid, newPid: fresh.child.pid });
    } catch (err) {
      watch.say?.(`${old.name} did not restart: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      restarting.delete(old);
    }
  };
  const probe = async () => {
    await Promise.all(
      list.map(async (proc, index) => {
        if (restarting.has(proc) || exitedAlready(proc.child)) return;
        const count = (await isLive(proc, timeoutMs)) ? 0 : (failed.get(proc) ?? 0) + 1;
        failed.set(proc, count);
        if (count >= threshold && !stopped) await restart(index, proc);
      }),
    );
  };
  const probing = repeatEvery(intervalMs, probe);
  return {
    get processes() {
      return list;
    },
    restarts,
    isRestarting: (proc) => restarting.has(proc),
    stop() {
      stopped = true;
      probing.stop();
    },
  };
}

type ServiceEnv = Record<string, string> & { PORT: string };

/** Whether the process answers its /livez within `timeoutMs`. */
async function isLive(proc: ServiceProcess, timeoutMs: number): Promise<boolean> {
  try {
    const res = await fetch(`${proc.url}/livez`, { signal: AbortSignal.timeout(timeoutMs) });
    await res.arrayBuffer();
    return res.ok;
  } catch {
    return false;
  }
}

/** Runs `task` `intervalMs` after the end of its previous run, until stopped; the timer keeps no process alive. */
function repeatEvery(intervalMs: number, task: () => Promise<void>): { stop(): void } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const loop = () => {
    timer = setTimeout(() => {
      void task().finally(() => {
        if (!stopped) loop();
      });
    }, intervalMs);
    timer.unref();
  };
  loop();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/**
 * What `npm run start:services` gives a service on top of the environment, unless the environment
 * sets it: audit (the event consumer and webhook deliveries, work no request waits for) runs at a
 * lower CPU priority, so on a shared machine its batches yield to the request path
 * (docs/DEPLOYMENT.md, "CPU priority").
 */
export const LAUNCHER_SERVICE_ENV: Partial<Record<ServiceName, Record<string, string>>> = {
  audit: { PROCESS_NICE: '10' },
};

/**
 * `VERIFY_REPLICAS` when unset: one verify process per two CPUs, at least one. Every request crosses
 * the gateway and one replica, so on two CPUs a second replica only adds its own idle work and
 * wake-ups to the CPUs the request path shares (docs/PERFORMANCE.md, round 13); on more CPUs
 * replicas add capacity.
 */
export function defaultVerifyReplicas(cpus = availableParallelism()): number {
  return Math.max(1, Math.min(16, Math.floor(cpus / 2)));
}

/** One process the launcher is about to spawn: which service, its label, the environment it gets. */
export interface PlannedProcess {
  service: ServiceName;
  label: string;
  env: Record<string, string> & { PORT: string };
}

export interface ServicesOptions extends SpawnOptions {
  /**
   * Told every process's environment before any is spawned; throwing (a ConfigError) ends the
   * start with nothing spawned. The launcher checks each service's configuration here.
   */
  checkConfig?: (planned: PlannedProcess[]) => void | Promise<void>;
  /** Every service's environment (AMQP_URL, REDIS_URL, INTERNAL_TOKEN_SECRET, …). */
  env: Record<string, string>;
  /** Per service, on top of `env` (the gateway's PORT, OPERATOR_TOKEN, …). */
  extra?: Partial<Record<ServiceName, Record<string, string>>>;
  /** How many verify processes (default 1); the gateway balances across them. */
  verifyReplicas?: number;
  /**
   * Identity verification with the TEST wallet, as `npm start` has it (scripts/local-wallet.ts):
   * identity's WALLET_* and the gateway's wallet JWT issuer, each unless the environment sets it.
   */
  localWallet?: boolean;
  /** Told one line per default chosen for the caller (the launcher prints them). */
  say?: (line: string) => void;
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

/**
 * After a failed start, the event spool of a gateway or verify process it killed (its default
 * directory: EVENT_SPOOL_DIR unset) is removed when it holds nothing to replay — a lock and an
 * empty journal — as that process's graceful stop would have done. One holding events is kept
 * for the next start (docs/DEPLOYMENT.md, "Delivery guarantees").
 */
async function removeIdleSpool(proc: ServiceProcess): Promise<void> {
  const { env, service } = proc;
  if ((service !== 'gateway' && service !== 'verify') || !env.AMQP_URL || env.EVENT_SPOOL_DIR) return;
  const dir = defaultSpoolDir(service, env.AMQP_NAMESPACE || 'mandate', Number(env.PORT));
  const entries = await readdir(dir).catch(() => undefined);
  if (!entries) return;
  for (const entry of entries) {
    if (entry === 'LOCK') continue;
    if (entry !== 'journal.ndjson' || (await stat(path.join(dir, entry))).size > 0) return;
  }
  await rm(dir, { recursive: true, force: true });
}

/**
 * Starts identity, mandates and audit at once, then the verify replicas, then the gateway in front
 * of them. Should any of them fail to start, every process spawned so far is stopped (and has
 * exited) before the error is thrown: a failed start leaves nothing behind.
 */
export async function startServices(options: ServicesOptions): Promise<Services> {
  // Every process spawned so far, healthy or not, so a failed start never leaves orphans behind.
  const spawned: ServiceProcess[] = [];
  let failed = false;
  const spawnOptions: SpawnOptions = {
    ...options,
    onSpawn: (p) => {
      spawned.push(p);
      options.onSpawn?.(p);
      // Spawned after another's start failed: it has no future either.
      if (failed) void p.stop('SIGKILL');
    },
  };
  const start = async (planned: PlannedProcess) => {
    const proc = spawnService(planned.service, planned.env, planned.label, spawnOptions);
    await waitHealthy(proc);
    return proc;
  };
  try {
    const plan = await planServices(options);
    await options.checkConfig?.([plan.identity, plan.mandates, plan.audit, ...plan.verify, plan.gateway]);
    return await startPlanned(plan, start);
  } catch (err) {
    failed = true;
    // The others may be half-way through their start: no graceful stop to wait for.
    await Promise.all(spawned.map((s) => s.stop('SIGKILL')));
    await Promise.all(spawned.map(removeIdleSpool));
    if (err instanceof ServiceStartError && !options.onLine)
      throw new Error(`${err.message}:\n${err.output}`);
    throw err;
  }
}

/** Every process to start, by service (verify's replicas in order). */
interface ServicesPlan extends Record<Exclude<ServiceName, 'verify'>, PlannedProcess> {
  verify: PlannedProcess[];
}

/**
 * Every process's port and environment, known before the first one is spawned (so checkConfig
 * sees them all, and a process is tracked from the moment it exists). PORT 0 (any free port) too
 * is chosen here: the launcher must know the port to hand it to the gateway.
 */
async function planServices(options: ServicesOptions): Promise<ServicesPlan> {
  const { env } = options;
  const extra = { ...options.extra };
  const portOf = async (name: ServiceName) => {
    const port = extra[name]?.PORT;
    return port && port !== '0' ? port : String(await freePort());
  };
  const gatewayPort = await portOf('gateway');
  if (options.localWallet) {
    const wallet = localWallet({ ...env, ...extra.identity }, { ...env, ...extra.gateway }, gatewayPort);
    extra.identity = { ...extra.identity, ...wallet.identity };
    extra.gateway = { ...extra.gateway, ...wallet.gateway };
    for (const line of wallet.notes) options.say?.(line);
  }
  // The evidence export (audit) reads from mandates, and mandates binds identity verifications
  // through identity: their ports are chosen up front so all three start at once.
  const [mandatesPort, identityPort, auditPort] = await Promise.all(
    (['mandates', 'identity', 'audit'] as const).map(portOf),
  );
  const count = options.verifyReplicas ?? 1;
  const verifyPorts = await Promise.all(Array.from({ length: count }, () => portOf('verify')));
  const envOf = (name: ServiceName, own: Record<string, string>) =>
    ({ ...env, ...extra[name], ...own }) as Record<string, string> & { PORT: string };
  const urlOf = (port: string) => `http://127.0.0.1:${port}`;
  const mandatesUrl = urlOf(mandatesPort!);
  return {
    identity: { service: 'identity', label: 'identity', env: envOf('identity', { PORT: identityPort! }) },
    mandates: {
      service: 'mandates',
      label: 'mandates',
      env: envOf('mandates', { PORT: mandatesPort!, IDENTITY_URL: urlOf(identityPort!) }),
    },
    audit: {
      service: 'audit',
      label: 'audit',
      env: envOf('audit', { PORT: auditPort!, MANDATES_URL: mandatesUrl }),
    },
    verify: verifyPorts.map((port, i) => ({
      service: 'verify',
      label: count === 1 ? 'verify' : `verify-${i + 1}`,
      env: envOf('verify', { PORT: port, MANDATES_URL: mandatesUrl }),
    })),
    gateway: {
      service: 'gateway',
      label: 'gateway',
      env: envOf('gateway', {
        PORT: gatewayPort,
        MANDATES_URL: mandatesUrl,
        VERIFY_URL: verifyPorts.map(urlOf).join(','),
        IDENTITY_URL: urlOf(identityPort!),
        AUDIT_URL: urlOf(auditPort!),
      }),
    },
  };
}

/** Identity, mandates and audit at once, then the verify replicas, then the gateway in front of them. */
async function startPlanned(
  plan: ServicesPlan,
  start: (planned: PlannedProcess) => Promise<ServiceProcess>,
): Promise<Services> {
  const [identity, mandates, audit] = await Promise.all([
    start(plan.identity),
    start(plan.mandates),
    start(plan.audit),
  ]);
  const verifyReplicas = await Promise.all(plan.verify.map(start));
  const gateway = await start(plan.gateway);
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
}

/**
 * The launcher's liveness watch: LIVENESS_WATCH_INTERVAL_MS between probes (default 10000) and
 * LIVENESS_WATCH_FAILURES failures in a row before a restart (default 3).
 */
function livenessWatchFromEnv(env = process.env): LivenessWatch {
  const number = (name: string) => {
    const value = env[name];
    if (value === undefined || value === '') return undefined;
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name}: must be a whole number of at least 1`);
    return n;
  };
  return { intervalMs: number('LIVENESS_WATCH_INTERVAL_MS'), failures: number('LIVENESS_WATCH_FAILURES') };
}

/** Only what a service reads: the launcher's own settings and the gateway's PORT/HOST stay out of the others. */
function inheritedEnv(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (
      v !== undefined &&
      ![
        'PORT',
        'HOST',
        'VERIFY_REPLICAS',
        'SERVICES_RUNTIME',
        'LIVENESS_WATCH_INTERVAL_MS',
        'LIVENESS_WATCH_FAILURES',
      ].includes(k)
    )
      out[k] = v;
  }
  return out;
}

async function main(): Promise<void> {
  const say = (line: string) => process.stdout.write(`[launcher] ${line}\n`);
  const config = launcherConfig();
  const { env, replicas, runtime } = config;
  say(
    `starting${runtime.kind === 'dist' ? ' the compiled' : ''} gateway, mandates, identity, audit and ${replicas} verify process(es) on RabbitMQ ${redactUrl(env.AMQP_URL!)}, ` +
      `Redis ${redactUrl(env.REDIS_URL!)}, ${env.MONGO_URL ? `MongoDB ${redactUrl(env.MONGO_URL)}` : 'in-memory stores (no MONGO_URL: data is lost when a process stops)'}`,
  );

  // Every process this launcher spawned, from the moment it exists: whatever ends the launcher
  // (a failed start, a service dying, a signal, an exception) stops all of them first.
  const launcher: Launcher = { spawned: [], stopping: false, supervisorStop: () => {}, say };
  const { spawned } = launcher;
  stopOnExit(launcher);

  const readable = process.stdout.isTTY === true;
  const spawnOptions: SpawnOptions = {
    runtime,
    detached: true,
    // A person at a terminal reads lines; anything else (a log collector, the tests) gets the JSON.
    onLine: (label, line) =>
      process.stdout.write(`[${label}] ${readable ? readableLogLine(line, { name: false }) : line}\n`),
    onSpawn: (p) => {
      spawned.push(p);
      // Tests and operators read the pids here, one line per process as it starts.
      say(`${p.name} pid ${p.child.pid} ${p.url} starting`);
      if (launcher.stopping) void p.stop('SIGKILL');
    },
  };
  try {
    launcher.running = await startServices({
      ...spawnOptions,
      // Loaded here only: the five services' code is what the check needs, and tests that start stacks do not.
      checkConfig: async (planned) => {
        (await import('./launch-config')).checkLaunchConfig(planned);
        // The gateway's port, valid by now: taken or forbidden, one line before anything is spawned.
        await assertCanListen(Number(process.env.PORT ?? '8080'), process.env.HOST ?? '127.0.0.1');
      },
      env,
      extra: launcherExtra(config),
      verifyReplicas: replicas,
      localWallet: true,
      say,
    });
  } catch (err) {
    await startFailed(launcher, err);
    return;
  }
  const services = launcher.running;
  // One process gone means the product is broken: stop the others and say so in the exit code. A
  // process the liveness watch is restarting is the exception (docs/DEPLOYMENT.md, "Liveness").
  const watchExit = (p: ServiceProcess) =>
    p.child.once('exit', (code, signal) => {
      if (launcher.stopping || supervisor.isRestarting(p)) return;
      say(`${p.name} exited (${signal ?? `code ${code}`}); stopping the others`);
      void stopAll(launcher, 1);
    });
  for (const p of services.all) watchExit(p);
  const supervisor: LivenessSupervisor = superviseLiveness(services.all, spawnOptions, {
    ...livenessWatchFromEnv(),
    say,
    onRestart: watchExit,
  });
  launcher.supervisorStop = () => supervisor.stop();
  announce(say, services, config);
}

/** The launcher's settings from its environment; a bad one ends it with a config error line. */
function launcherConfig(): {
  replicas: number;
  runtime: Runtime;
  generatedOperatorToken?: string;
  generatedSigningKey?: string;
  env: Record<string, string>;
} {
  const replicas = process.env.VERIFY_REPLICAS
    ? Number(process.env.VERIFY_REPLICAS)
    : defaultVerifyReplicas();
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > 16) {
    process.stderr.write(
      'config error: VERIFY_REPLICAS: must be a whole number between 1 and 16 (default: one per two CPUs)\n',
    );
    process.exit(1);
  }
  let runtime: Runtime;
  try {
    runtime = runtimeFromEnv();
  } catch (err) {
    process.stderr.write(`config error: ${(err as Error).message}\n`);
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
  return { replicas, runtime, generatedOperatorToken, generatedSigningKey, env };
}

/** What the launcher gives each service on top of the shared environment. */
function launcherExtra(config: ReturnType<typeof launcherConfig>): ServicesOptions['extra'] {
  const { generatedSigningKey, generatedOperatorToken } = config;
  return {
    audit: process.env.PROCESS_NICE ? {} : LAUNCHER_SERVICE_ENV.audit,
    mandates: {
      ...(generatedSigningKey ? { LOCAL_SIGNING_KEY: generatedSigningKey } : {}),
      // Status-list uris signed into mandates name the gateway this launcher starts.
      ...(process.env.PUBLIC_BASE_URL
        ? {}
        : { PUBLIC_BASE_URL: `http://127.0.0.1:${process.env.PORT ?? '8080'}` }),
    },
    // The AuthZEN metadata (docs/API.md#authzen) names the same gateway.
    verify: process.env.PUBLIC_BASE_URL
      ? {}
      : { PUBLIC_BASE_URL: `http://127.0.0.1:${process.env.PORT ?? '8080'}` },
    gateway: {
      PORT: process.env.PORT ?? '8080',
      HOST: process.env.HOST ?? '127.0.0.1',
      OPERATOR_TOKEN: process.env.OPERATOR_TOKEN || generatedOperatorToken!,
    },
  };
}

/** The launcher's processes and whether it is stopping them. */
interface Launcher {
  spawned: ServiceProcess[];
  running?: Services;
  stopping: boolean;
  supervisorStop: () => void;
  say: (line: string) => void;
}

/** Stops every process (once), then exits with `code`. */
async function stopAll(launcher: Launcher, code: number): Promise<void> {
  const { spawned, running, say } = launcher;
  if (launcher.stopping) return;
  launcher.stopping = true;
  say('stopping every service');
  launcher.supervisorStop();
  // Started: gateway first (no new work), then the others; during the start: all at once.
  await (running ? running.stop() : Promise.all(spawned.map((p) => p.stop())));
  // A process the liveness watch restarted is not in `running`: stopped gracefully too.
  await Promise.all(spawned.map((p) => p.stop()));
  // Whatever is left (a process spawned while stopping) is killed, never left behind.
  await Promise.all(spawned.map((p) => p.stop('SIGKILL')));
  say(`stopped (exit ${code})`);
  process.exit(code);
}

/** Signals, crashes and the launcher's own exit stop every process first. */
function stopOnExit(launcher: Launcher): void {
  // `on`, not `once`: a Ctrl-C under `npm run` arrives twice (the terminal's and tsx's relay), and a
  // second signal without a handler would kill the launcher half-way through stopping.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.on(signal, () => void stopAll(launcher, 0));
  const crashed = (err: unknown) => {
    process.stderr.write(`[launcher] ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    void stopAll(launcher, 1);
  };
  process.on('uncaughtException', crashed);
  process.on('unhandledRejection', crashed);
  // Last resort should this process exit without stopping them (process.exit elsewhere): a signal
  // to each group. A SIGKILL of the launcher itself skips this; the services notice it by their
  // IPC channel closing (runService) and stop on their own.
  process.once('exit', () => {
    for (const p of launcher.spawned)
      if (p.child.exitCode === null && p.child.signalCode === null && p.child.pid !== undefined) {
        try {
          process.kill(-p.child.pid, 'SIGTERM');
        } catch {
          // already gone
        }
      }
  });
}

/** A failed start: one line saying why (one per problem for a config error), and every process stopped. */
async function startFailed(launcher: Launcher, err: unknown): Promise<void> {
  const { spawned } = launcher;
  if (launcher.stopping) return; // a signal arrived during the start: stopAll exits
  if (err instanceof ConfigError && spawned.length === 0) {
    // Nothing was spawned: one line per problem, naming the variable, and nothing to stop.
    for (const problem of err.problems) process.stderr.write(`config error: ${problem}\n`);
    process.exit(1);
  }
  if (err instanceof ListenError && spawned.length === 0) {
    process.stderr.write(`listen error: ${err.line}\n`);
    process.exit(1);
  }
  // The service's own lines (its config errors) are above, prefixed with its name: one line here.
  const reason =
    err instanceof ServiceStartError
      ? `${err.message}; its output is above`
      : err instanceof Error
        ? (err.stack ?? err.message)
        : String(err);
  process.stderr.write(`[launcher] ${reason}\n`);
  await stopAll(launcher, 1);
}

/** The lines a person needs once everything runs: where the API is, and what was generated. */
function announce(
  say: (line: string) => void,
  services: Services,
  config: ReturnType<typeof launcherConfig>,
): void {
  say(
    `API: ${services.gateway.url}   (walk-through: README.md, "API walk-through"; OpenAPI: ${services.gateway.url}/v1/openapi.json)`,
  );
  if (config.generatedOperatorToken) {
    // Both exports on the one line that shows the token, as the walk-through starts with them (README.md).
    say(
      `operator token (shown once), into your shell: export API=${services.gateway.url}; export OPERATOR_TOKEN=${config.generatedOperatorToken}`,
    );
  }
  if (config.generatedSigningKey)
    say(
      'mandates signs with a key generated for this run (set LOCAL_SIGNING_KEY_FILE to keep one across runs)',
    );
  say('Ctrl-C stops every service');
}

if (require.main === module) void main();
