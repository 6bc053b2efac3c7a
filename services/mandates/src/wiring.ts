import {
  InProcessBus,
  RabbitPublisher,
  amqpTopology,
  connectMongo,
  internalTokens,
  snapshotMac,
  systemClock,
  type Logger,
} from '@mandate/shared';
import type { Deps } from './app';
import type { Config } from './config';
import { createSigner } from './signing/select';
import { MemoryMandateStore } from './store/memory-mandate-store';
import { MongoMandateStore } from './store/mongo-mandate-store';
import { NoSnapshots } from './snapshots/mandate-snapshots';
import { RedisSnapshots } from './snapshots/redis-snapshots';

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
        logger.warn('mandates: in-memory store (no MONGO_URL); data is lost on restart');
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
        logger.warn('mandates: in-process event bus (no AMQP_URL); events reach no other process');
      }
    }

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

    let snapshots = overrides.snapshots;
    if (!snapshots) {
      if (config.REDIS_URL) {
        // Verify trusts a snapshot only with its MAC, so one keyed like verify's is needed to write any.
        if (!config.INTERNAL_TOKEN_SECRET)
          throw new Error('INTERNAL_TOKEN_SECRET is required with REDIS_URL (it keys the snapshot MAC)');
        const redis = await RedisSnapshots.connect(config.REDIS_URL, logger, {
          mac: snapshotMac(config.INTERNAL_TOKEN_SECRET),
          prefix: config.SNAPSHOT_PREFIX,
          ttlSeconds: config.SNAPSHOT_TTL_SECONDS,
        });
        closers.push(() => redis.close());
        snapshots = redis;
      } else {
        snapshots = new NoSnapshots();
        logger.warn(
          'mandates: no REDIS_URL, no mandate snapshots (verify reads every mandate from this service)',
        );
      }
    }

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
