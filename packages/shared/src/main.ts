import type { z } from 'zod';
import { ConfigError, parseConfig } from './config';
import { createLogger, type Logger } from './logger';
import { separateProcessConfig } from './secrets';
import type { RunningServer } from './server';

interface Runnable {
  start(port?: number, host?: string): Promise<RunningServer>;
  stop(): Promise<void>;
}

/** What every service's configuration has. */
interface BaseConfig {
  PORT: number;
  HOST: string;
  LOG_LEVEL: string;
  AMQP_URL?: string;
  REDIS_URL?: string;
  MONGO_URL?: string;
}

export interface ServiceMain<C extends BaseConfig, D> {
  name: string;
  configSchema: z.ZodType<C, unknown>;
  wire(config: C, logger: Logger): Promise<{ deps: D; close(): Promise<void> }>;
  createApp(deps: D): Runnable;
  /** Whether it keeps data (MongoDB, else memory); its startup line says which. */
  hasStore?: boolean;
}

/**
 * The body of every service's main.ts: parse the environment, wire the adapters, listen, and on
 * SIGTERM/SIGINT stop taking requests, then close the adapters (flushing what they hold) and exit.
 */
export function runService<C extends BaseConfig, D>(main: ServiceMain<C, D>): void {
  const run = async () => {
    // Outside embedded mode: secrets may come from *_FILE, and weak or documented ones refuse to start.
    const config = parseConfig(separateProcessConfig(main.configSchema));
    const logger = createLogger(main.name, config.LOG_LEVEL);
    const wired = await main.wire(config, logger);
    const service = main.createApp(wired.deps);
    const server = await service.start(config.PORT, config.HOST);
    // Honest about how it runs: this is one process of five, and which infrastructure it was given.
    logger.info(
      {
        url: server.url,
        mode: 'separate process',
        events: config.AMQP_URL ? 'RabbitMQ' : 'in-process bus (no AMQP_URL: no other process receives them)',
        redis: config.REDIS_URL ? 'Redis' : 'none (no REDIS_URL)',
        ...(main.hasStore ? { store: config.MONGO_URL ? 'MongoDB' : 'in memory (no MONGO_URL)' } : {}),
      },
      `${main.name} listening (separate process)`,
    );

    let stopping = false;
    const shutdown = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal }, `${main.name} stopping`);
      try {
        await service.stop();
        await wired.close();
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
 * What a process that could not start prints: for a bad configuration one line per variable
 * (`config error: PORT must be …`) and no stack trace, which would only hide the line that matters;
 * anything else in full.
 */
export function reportStartFailure(
  err: unknown,
  write: (line: string) => void = (l) => console.error(l),
): void {
  if (err instanceof ConfigError) for (const problem of err.problems) write(`config error: ${problem}`);
  else write(err instanceof Error ? (err.stack ?? err.message) : String(err));
}
