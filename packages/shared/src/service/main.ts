import type { z } from 'zod';
import { describeAmqp } from '../core/amqp-url';
import { ConfigError, parseConfig } from '../core/config';
import { deploymentProblems, type DeploymentNeeds } from './deployment';
import { InfrastructureError, infrastructureProblem } from '../core/infrastructure-errors';
import { configureLiveness } from '../core/liveness';
import { createLogger, type Logger } from '../observability/logger';
import { separateProcessConfig } from '../core/secrets';
import { ListenError, type AppLifecycle, type RunningServer } from '../http/server';
import { startTracing, type TracingConfig } from '../observability/tracing';
import { lowerOwnPriority } from './priority';
import type { Wire } from './wiring';

/** What every service's configuration has. */
export interface BaseConfig extends TracingConfig {
  PORT: number;
  HOST: string;
  LOG_LEVEL: string;
  AMQP_URL?: string;
  REDIS_URL?: string;
  MONGO_URL?: string;
  /** commonConfigShape's; absent in a test's own schema. */
  LIVENESS_FAIL_AFTER_MS?: number;
  /** commonConfigShape's; absent in a test's own schema. */
  PROCESS_NICE?: number;
}

export interface ServiceMain<C extends BaseConfig, D, O = Partial<D>> {
  name: string;
  configSchema: z.ZodType<C, unknown>;
  /**
   * The configuration as a process of its own (not embedded mode) must also satisfy, when stricter
   * than configSchema (mandates: a signing key every replica shares); absent = configSchema.
   */
  separateProcessConfigSchema?: z.ZodType<C, unknown>;
  /** The service's wiring.ts: adapters by the composition rule (`compose`), overrides from the embedded launcher or a test. */
  wire: Wire<C, D, O>;
  createApp(deps: D): AppLifecycle;
  /** Whether it keeps data (MongoDB, else memory); its startup line says which. */
  hasStore?: boolean;
  /**
   * What it needs once it listens beyond loopback as its own process (a container, a pod):
   * variables that must be set, URLs that must not be loopback (deployment.ts).
   */
  deployment?: DeploymentNeeds;
}

export interface StartOptions<O> {
  /** Passed to wire(); the variables still win over them. */
  overrides?: O;
  /** Instead of LOG_LEVEL (the embedded launcher's quiet mode). */
  logLevel?: string;
  /** A process of its own: secrets may come from *_FILE, and weak or documented ones refuse to start. */
  separateProcess?: boolean;
}

export interface StartedService<C, D = unknown> {
  config: C;
  logger: Logger;
  /** What wire() built (a test reads the stores through it). */
  deps: D;
  server: RunningServer;
  /** Stops taking requests, then closes the adapters (flushing what they hold). */
  stop(): Promise<void>;
}

/**
 * A service's configuration as it starts: the environment parsed by its schema and, as a process
 * of its own, by the stricter rules of one (secrets, `<NAME>_FILE`) and, listening beyond
 * loopback, its deployment needs. Every problem is one `NAME: …` line of one ConfigError. The
 * deployment tests (test/deploy) load the rendered manifests' environments through this.
 */
export function serviceConfig<C extends BaseConfig>(
  main: Pick<ServiceMain<C, unknown>, 'configSchema' | 'separateProcessConfigSchema' | 'deployment'>,
  env: NodeJS.ProcessEnv,
  separateProcess: boolean,
): C {
  if (!separateProcess) return parseConfig(main.configSchema, env);
  let config: C | undefined;
  let problems: string[] = [];
  try {
    config = parseConfig(separateProcessConfig(main.separateProcessConfigSchema ?? main.configSchema), env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems = err.problems;
  }
  // HOST as the schema would read it, also when another variable failed: every problem at once.
  const host = config?.HOST ?? (env.HOST || '127.0.0.1');
  const needs = main.deployment ? deploymentProblems(env, host, main.deployment) : [];
  const named = new Set(problems.map((p) => p.slice(0, p.indexOf(':'))));
  problems.push(...needs.filter((p) => !named.has(p.slice(0, p.indexOf(':')))));
  if (problems.length > 0 || !config) throw new ConfigError(problems);
  return config;
}

/**
 * The steps of every service's start, for its own process (runService) and for the embedded
 * launcher alike: parse the environment, wire the adapters, create the app, listen on PORT/HOST.
 */
export async function startService<C extends BaseConfig, D, O>(
  main: ServiceMain<C, D, O>,
  env: NodeJS.ProcessEnv = process.env,
  options: StartOptions<O> = {},
): Promise<StartedService<C, D>> {
  const config = serviceConfig(main, env, options.separateProcess === true);
  configureLiveness({ failAfterMs: config.LIVENESS_FAIL_AFTER_MS });
  // Before anything that creates spans or logs (a no-op without OTEL_EXPORTER_OTLP_ENDPOINT).
  const tracing = startTracing(config, main.name);
  const logger = createLogger(main.name, options.logLevel ?? config.LOG_LEVEL);
  let wired: Awaited<ReturnType<typeof main.wire>> | undefined;
  let service: AppLifecycle | undefined;
  let server: RunningServer;
  try {
    wired = await main.wire(config, logger, options.overrides);
    service = main.createApp(wired.deps);
    server = await service.start(config.PORT, config.HOST);
  } catch (err) {
    // Whatever start() got going (a consumer, a sweeper) and the adapters must not outlive the failure.
    await service?.stop().catch(() => undefined);
    await wired?.close().catch(() => undefined);
    await tracing.shutdown().catch(() => undefined);
    // A taken or forbidden port is its own one line (ListenError), never mistaken for a URL's.
    if (err instanceof ListenError) throw err;
    // Unreachable infrastructure, a refused password, an unknown vhost: one line naming the URL.
    const problem = infrastructureProblem(err, config);
    throw problem ? new InfrastructureError(problem, { cause: err }) : err;
  }
  const adapters = wired;
  const started = service;
  return {
    config,
    logger,
    deps: adapters.deps,
    server,
    async stop() {
      try {
        await started.stop();
        await adapters.close();
      } finally {
        // Last: the spans of what stopping flushed (the final audit writes) are exported too.
        await tracing.shutdown().catch(() => undefined);
      }
    },
  };
}

/**
 * The body of every service's main.ts: parse the environment, wire the adapters, listen, and on
 * SIGTERM/SIGINT stop taking requests, then close the adapters (flushing what they hold) and exit.
 */
export function runService<C extends BaseConfig, D, O>(main: ServiceMain<C, D, O>): void {
  // Until it listens, a stop is an exit: nothing has been taken on that needs flushing.
  let shutdown: (reason: string) => unknown = () => process.exit(1);
  exitWithLauncher((reason) => shutdown(reason));
  const run = async () => {
    // Outside embedded mode: secrets may come from *_FILE, and weak or documented ones refuse to start.
    const { config, logger, server, stop } = await startService(main, process.env, { separateProcess: true });
    lowerPriority(config.PROCESS_NICE, logger);
    // Honest about how it runs: this is one process of five, and which infrastructure it was given.
    logger.info(
      {
        url: server.url,
        mode: 'separate process',
        events: config.AMQP_URL ? 'RabbitMQ' : 'in-process bus (no AMQP_URL: no other process receives them)',
        // Which RabbitMQ topology (docs/CONFIGURATION.md, "Every service"): one node or a cluster's.
        ...(config.AMQP_URL ? { amqp: describeAmqp(config.AMQP_URL) } : {}),
        redis: config.REDIS_URL ? 'Redis' : 'none (no REDIS_URL)',
        ...(main.hasStore ? { store: config.MONGO_URL ? 'MongoDB' : 'in memory (no MONGO_URL)' } : {}),
      },
      `${main.name} listening (separate process)`,
    );

    let stopping = false;
    shutdown = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal }, `${main.name} stopping`);
      try {
        await stop();
        process.exit(0);
      } catch (err) {
        logger.error({ err }, `${main.name} did not stop cleanly`);
        process.exit(1);
      }
    };
    process.once('SIGTERM', () => void shutdown('SIGTERM'));
    process.once('SIGINT', () => void shutdown('SIGINT'));
  };
  run().catch((err: unknown) => {
    // The logger may not exist yet (bad configuration), so this goes to stderr directly.
    reportStartFailure(err);
    process.exit(1);
  });
}

/**
 * PROCESS_NICE (docs/DEPLOYMENT.md, "CPU priority"): a background process (audit's consumer and
 * webhook deliveries) gives way to the request path's processes whenever they share a CPU, so its
 * batches no longer hold a core a verify is waiting for. Raising one's own nice value needs no
 * privilege; a refusal (a sandbox) is logged and the process runs at its priority.
 */
function lowerPriority(nice: number | undefined, logger: Logger): void {
  if (!nice) return;
  try {
    lowerOwnPriority(nice);
  } catch (err) {
    logger.warn({ err, nice }, 'PROCESS_NICE not applied: the process keeps its priority');
  }
}

/** How long a service whose launcher has gone may take to stop before it exits anyway. */
const ORPHAN_STOP_DEADLINE_MS = 10_000;

/**
 * A service spawned by a launcher (scripts/services.ts: an IPC channel and LAUNCHER_PID) stops when
 * that channel closes: the launcher has exited or was killed, even with SIGKILL, and nobody would
 * stop this process any more. A launcher gone before this runs (the channel already closed, or
 * another parent) stops it at once. The channel does not keep the process alive; a stop that hangs
 * ends in exit(1).
 */
function exitWithLauncher(stop: (reason: string) => unknown): void {
  const launcherPid = Number(process.env.LAUNCHER_PID);
  if (!launcherPid) return;
  const gone = () => {
    setTimeout(() => process.exit(1), ORPHAN_STOP_DEADLINE_MS).unref();
    void stop('launcher gone');
  };
  if (!process.connected || process.ppid !== launcherPid) return gone();
  process.channel?.unref();
  process.once('disconnect', gone);
}

/**
 * What a process that could not start prints: for a bad configuration one line per variable
 * (`config error: PORT must be …`), for unusable infrastructure or a port it cannot listen on one
 * line (`infrastructure error: …`, `listen error: …`), and no stack trace, which would only hide the line that matters;
 * anything else in full.
 */
export function reportStartFailure(
  err: unknown,
  write: (line: string) => void = (l) => console.error(l),
): void {
  if (err instanceof ConfigError) for (const problem of err.problems) write(`config error: ${problem}`);
  else if (err instanceof InfrastructureError) write(`infrastructure error: ${err.line}`);
  else if (err instanceof ListenError) write(`listen error: ${err.line}`);
  else write(err instanceof Error ? (err.stack ?? err.message) : String(err));
}
