import {
  InProcessBus,
  RabbitPublisher,
  amqpTopology,
  connectMongo,
  internalTokens,
  systemClock,
  type Logger,
} from '@mandate/shared';
import type { Deps } from './app';
import type { Config } from './config';
import { LocalSigner } from './signing/local-signer';
import { MemoryMandateStore } from './store/memory-mandate-store';
import { MongoMandateStore } from './store/mongo-mandate-store';

/**
 * Builds every dependency from configuration: each *_URL switches its adapter on; without them
 * the service runs embedded (memory store, in-process bus, generated signing key).
 * `close()` closes only what was created here, not the overrides.
 */
export async function wire(
  config: Config,
  logger: Logger,
  overrides: Partial<Deps> = {},
): Promise<{ deps: Deps; close(): Promise<void> }> {
  const closers: (() => Promise<void>)[] = [];
  try {
    let store = overrides.store;
    if (!store) {
      if (config.MONGO_URL) {
        const connection = await connectMongo(config.MONGO_URL, config.MONGO_DB, logger);
        closers.push(() => connection.close());
        store = await MongoMandateStore.create(connection);
      } else {
        store = new MemoryMandateStore();
        logger.warn('mandates: in-memory store (embedded mode); data is lost on restart');
      }
    }

    let publisher = config.AMQP_URL ? undefined : overrides.publisher;
    if (!publisher) {
      if (config.AMQP_URL) {
        const rabbit = new RabbitPublisher(config.AMQP_URL, logger, amqpTopology(config.AMQP_NAMESPACE));
        closers.push(() => rabbit.close());
        await rabbit.connect();
        publisher = rabbit;
      } else {
        const bus = new InProcessBus(logger);
        closers.push(() => bus.close());
        publisher = bus;
        logger.warn('mandates: in-process event bus (embedded mode); events go nowhere else');
      }
    }

    let signer = overrides.signer;
    if (!signer) {
      const local =
        !config.LOCAL_SIGNING_KEY && config.LOCAL_SIGNING_KEY_FILE
          ? await LocalSigner.fromFile(config.LOCAL_SIGNING_KEY_FILE)
          : await LocalSigner.create(config.LOCAL_SIGNING_KEY);
      if (local.generated) {
        logger.warn(
          { kid: local.kid },
          'mandates: signing key generated at start (embedded mode); signatures will not verify after a restart',
        );
      } else {
        logger.info({ kid: local.kid }, 'mandates: signing with the configured local key');
      }
      signer = local;
    }

    let tokens = overrides.tokens;
    if (!tokens) {
      if (!config.INTERNAL_TOKEN_SECRET)
        throw new Error('INTERNAL_TOKEN_SECRET is required (at least 32 characters)');
      tokens = internalTokens(config.INTERNAL_TOKEN_SECRET);
    }

    const deps: Deps = {
      store,
      publisher,
      signer,
      tokens,
      logger: overrides.logger ?? logger,
      clock: overrides.clock ?? systemClock,
    };
    return { deps, close: () => closeAll(closers) };
  } catch (err) {
    await closeAll(closers);
    throw err;
  }
}

async function closeAll(closers: (() => Promise<void>)[]): Promise<void> {
  for (const close of closers.reverse()) await close().catch(() => undefined);
}
