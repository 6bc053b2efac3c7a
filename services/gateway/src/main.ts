import { createLogger } from '@mandate/shared';
import { createApp } from './app';
import { loadGatewayConfig } from './config';
import { wire } from './wiring';

async function main() {
  const config = loadGatewayConfig();
  const logger = createLogger('gateway', config.LOG_LEVEL);
  const { deps, close } = await wire(config, logger);
  const app = createApp(deps);
  const server = await app.start(config.PORT, config.HOST);
  logger.info({ url: server.url }, 'gateway listening');

  const shutdown = async (signal: string) => {
    logger.info({ signal }, 'shutting down');
    await app.stop();
    await close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
