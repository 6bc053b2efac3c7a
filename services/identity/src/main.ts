import { createLogger } from '@mandate/shared';
import { createApp } from './app';
import { loadConfig } from './config';
import { wire } from './wiring';

/** The only file that connects and listens. */
async function main() {
  const config = loadConfig();
  const logger = createLogger('identity', config.LOG_LEVEL);
  const { deps, close } = await wire(config, logger);
  const app = createApp(deps);
  const server = await app.start(config.PORT, config.HOST);
  logger.info(
    { url: server.url, store: config.MONGO_URL ? 'mongodb' : 'memory', bus: deps.publisher.kind },
    'identity listening',
  );

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'identity stopping');
    await app.stop();
    await close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err) => {
  // The logger may not exist yet (bad configuration), so this goes to stderr directly.
  console.error(err);
  process.exit(1);
});
