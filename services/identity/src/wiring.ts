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
import type { IdentityConfig } from './config';
import { MemoryIdentityStore } from './store/memory-identity-store';
import { MongoIdentityStore } from './store/mongo-identity-store';

/**
 * Builds the dependencies from configuration, like the other services: the variable wins, then
 * the override, then the local default. MongoDB when MONGO_URL is set, else the store override,
 * else memory; RabbitMQ when AMQP_URL is set, else the publisher override (embedded mode passes
 * its shared bus), else a private in-process bus. If the override won over AMQP_URL, `npm start`
 * with AMQP_URL would publish identity's events into an in-process bus nothing consumes.
 * Overrides are not closed here.
 */
export async function wire(
  config: IdentityConfig,
  logger: Logger,
  overrides: Partial<Deps> = {},
): Promise<{ deps: Deps; close(): Promise<void> }> {
  const closers: (() => Promise<void>)[] = [];
  try {
    let tokens = overrides.tokens;
    if (!tokens) {
      if (!config.INTERNAL_TOKEN_SECRET) throw new Error('INTERNAL_TOKEN_SECRET is required');
      tokens = internalTokens(config.INTERNAL_TOKEN_SECRET);
    }

    let store = config.MONGO_URL ? undefined : overrides.store;
    if (!store) {
      if (config.MONGO_URL) {
        const connection = await connectMongo(config.MONGO_URL, config.MONGO_DB, logger);
        closers.push(() => connection.close());
        store = await MongoIdentityStore.create(connection);
      } else {
        logger.warn('MONGO_URL not set: identity uses an in-memory store; data is lost on restart');
        store = new MemoryIdentityStore();
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
      }
    }

    const deps: Deps = {
      store,
      publisher,
      tokens,
      logger: overrides.logger ?? logger,
      clock: overrides.clock ?? systemClock,
      stagingKeyTtlMs: overrides.stagingKeyTtlMs ?? config.STAGING_KEY_TTL_HOURS * 3_600_000,
      stagingSweepIntervalMs: overrides.stagingSweepIntervalMs ?? config.STAGING_KEY_SWEEP_INTERVAL_MS,
    };
    return {
      deps,
      close: async () => {
        for (const close of closers.reverse())
          await close().catch((err) => logger.warn({ err }, 'close failed'));
      },
    };
  } catch (err) {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    throw err;
  }
}
