import {
  InProcessBus,
  RabbitPublisher,
  amqpTopology,
  compose,
  connectMongo,
  internalTokens,
  snapshotMac,
  systemClock,
  type EventPublisher,
  type Logger,
} from '@mandate/shared';
import type { Deps } from './app';
import type { Config } from './config';
import { createSigner } from './signing/select';
import type { MandateStore } from './store/mandate-store';
import { MemoryMandateStore } from './store/memory-mandate-store';
import { MongoMandateStore } from './store/mongo-mandate-store';
import { NoSnapshots, type MandateSnapshots } from './snapshots/mandate-snapshots';
import { RedisSnapshots } from './snapshots/redis-snapshots';

/**
 * Builds every dependency from configuration: each *_URL switches its adapter on, over any
 * override; without them the override or the embedded default (memory store, in-process bus,
 * no snapshots, generated signing key).
 * `close()` closes only what was created here, not the overrides.
 */
export async function wire(
  config: Config,
  logger: Logger,
  overrides: Partial<Deps> = {},
): Promise<{ deps: Deps; close(): Promise<void> }> {
  const closers: (() => Promise<void>)[] = [];
  try {
    // Each adapter by the one composition rule (compose): the variable, else the override, else the local default.
    const { adapter: store } = await compose<MandateStore>({
      variable: config.MONGO_URL,
      fromVariable: async (url) => {
        const connection = await connectMongo(url, config.MONGO_DB, logger);
        closers.push(() => connection.close());
        return MongoMandateStore.create(connection);
      },
      override: overrides.store,
      local: () => {
        logger.warn('mandates: in-memory store (no MONGO_URL); data is lost on restart');
        return new MemoryMandateStore();
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
        logger.warn('mandates: in-process event bus (no AMQP_URL); events reach no other process');
        return bus;
      },
    });

    let signer = overrides.signer;
    if (!signer) {
      // KMS when KMS_KEY_ID / SIGNING_KEY_IDS are set, else the local key; logs which one.
      const created = await createSigner(config, logger);
      closers.push(() => created.close());
      signer = created.signer;
    }

    let tokens = overrides.tokens;
    if (!tokens) {
      if (!config.INTERNAL_TOKEN_SECRET)
        throw new Error('INTERNAL_TOKEN_SECRET is required (at least 32 characters)');
      tokens = internalTokens(config.INTERNAL_TOKEN_SECRET);
    }

    const { adapter: snapshots } = await compose<MandateSnapshots>({
      variable: config.REDIS_URL,
      fromVariable: async (url) => {
        // Verify trusts a snapshot only with its MAC, so one keyed like verify's is needed to write any.
        if (!config.INTERNAL_TOKEN_SECRET)
          throw new Error('INTERNAL_TOKEN_SECRET is required with REDIS_URL (it keys the snapshot MAC)');
        const redis = await RedisSnapshots.connect(url, logger, {
          mac: snapshotMac(config.INTERNAL_TOKEN_SECRET),
          prefix: config.SNAPSHOT_PREFIX,
          ttlSeconds: config.SNAPSHOT_TTL_SECONDS,
        });
        closers.push(() => redis.close());
        return redis;
      },
      override: overrides.snapshots,
      local: () => {
        logger.warn(
          'mandates: no REDIS_URL, no mandate snapshots (verify reads every mandate from this service)',
        );
        return new NoSnapshots();
      },
    });

    const deps: Deps = {
      store,
      publisher,
      signer,
      tokens,
      logger: overrides.logger ?? logger,
      clock: overrides.clock ?? systemClock,
      snapshots,
      sweepIntervalMs: overrides.sweepIntervalMs ?? config.EXPIRY_SWEEP_INTERVAL_MS,
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
