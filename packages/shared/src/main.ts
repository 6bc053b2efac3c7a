import type { z } from 'zod';
import { parseConfig } from './config';
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
}

export interface ServiceMain<C extends BaseConfig, D> {
  name: string;
  configSchema: z.ZodType<C, unknown>;
  wire(config: C, logger: Logger): Promise<{ deps: D; close(): Promise<void> }>;
  createApp(deps: D): Runnable;
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
    logger.info({ url: server.url }, `${main.name} listening`);

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
    console.error(err);
    process.exit(1);
  });
}
