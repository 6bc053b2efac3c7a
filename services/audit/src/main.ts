import { createLogger, parseConfig } from '@mandate/shared';
import { createApp } from './app';
import { auditConfigSchema } from './config';
import { wire } from './wiring';

async function main() {
  const config = parseConfig(auditConfigSchema);
  const logger = createLogger('audit', config.LOG_LEVEL);
  const wired = await wire(config, logger);
  const service = createApp(wired.deps);
  const server = await service.start(config.PORT, config.HOST);
  logger.info({ url: server.url }, 'audit service listening');

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'audit service stopping');
    try {
      await service.stop();
      await wired.close();
      process.exit(0);
    } catch (err) {
      logger.error({ err }, 'audit service did not stop cleanly');
      process.exit(1);
    }
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
