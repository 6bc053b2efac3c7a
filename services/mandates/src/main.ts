import { createLogger, parseConfig } from '@mandate/shared';
import { createApp } from './app';
import { configSchema } from './config';
import { wire } from './wiring';

async function main() {
  const config = parseConfig(configSchema);
  const logger = createLogger('mandates', config.LOG_LEVEL);
  const { deps, close } = await wire(config, logger);
  const service = createApp(deps);
  const server = await service.start(config.PORT, config.HOST);
  logger.info({ url: server.url }, 'mandates service listening');

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'mandates service stopping');
    await service.stop();
    await close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
