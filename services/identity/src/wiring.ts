import {
  InProcessBus,
  RabbitPublisher,
  amqpTopology,
  compose,
  connectMongo,
  internalTokens,
  systemClock,
  type EventPublisher,
  type Logger,
} from '@mandate/shared';
import type { Deps } from './app';
import type { IdentityConfig } from './config';
import type { IdentityStore } from './store/identity-store';
import { MemoryIdentityStore } from './store/memory-identity-store';
import { MongoIdentityStore } from './store/mongo-identity-store';

/**
 * Builds the dependencies from configuration by the one composition rule (`compose`): MongoDB
 * when MONGO_URL is set, else the store override, else memory; RabbitMQ when AMQP_URL is set,
 * else the publisher override (embedded mode passes its shared bus), else a private in-process
 * bus. Overrides are not closed here.
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

    // The variable wins, then the override, then the local default (see compose).
    const { adapter: store } = await compose<IdentityStore>({
      variable: config.MONGO_URL,
      fromVariable: async (url) => {
        const connection = await connectMongo(url, config.MONGO_DB, logger);
        closers.push(() => connection.close());
        return MongoIdentityStore.create(connection);
      },
      override: overrides.store,
      local: () => {
        logger.warn('MONGO_URL not set: identity uses an in-memory store; data is lost on restart');
        return new MemoryIdentityStore();
      },
    });

    const { adapter: publisher } = await compose<EventPublisher>({
      variable: config.AMQP_URL,
      fromVariable: async (url) => {
        const rabbit = new RabbitPublisher(url, logger, amqpTopology(config.AMQP_NAMESPACE));
        closers.push(() => rabbit.close());
        await rabbit.connect();
        return rabbit;
      },
      override: overrides.publisher,
      local: () => {
        const bus = new InProcessBus(logger);
        closers.push(() => bus.close());
        return bus;
      },
    });

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
