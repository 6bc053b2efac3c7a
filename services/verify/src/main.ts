import { createLogger } from '@mandate/shared';
import { createApp } from './app';
import { loadConfig } from './config';
import { wire } from './wiring';

async function main() {
  const config = loadConfig();
  const logger = createLogger('verify', config.LOG_LEVEL);
  const wired = await wire(config, logger);
  const verify = createApp(wired.deps);
  const server = await verify.start(config.PORT, config.HOST);
  logger.info({ url: server.url }, 'verify listening');

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'verify stopping');
    await verify.stop();
    await wired.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
