import {
  composeStoreAndPublisher,
  loggerAndClock,
  tokensFor,
  wireWith,
  type Wire,
} from '@mandate/shared/service';
import type { Deps } from './deps';
import type { IdentityConfig } from './config';
import { walletVerifierFromConfig } from './identity-verifications/wallet-config';
import type { IdentityStore } from './store/identity-store';
import { MemoryIdentityStore } from './store/memory-identity-store';
import { MongoIdentityStore } from './store/mongo-identity-store';

/**
 * Builds the dependencies from configuration by the one composition rule (`compose`): MongoDB
 * when MONGO_URL is set, else the store override, else memory; RabbitMQ when AMQP_URL is set,
 * else the publisher override (embedded mode passes its shared bus), else a private in-process
 * bus. Overrides are not closed here.
 */
export const wire: Wire<IdentityConfig, Deps> = (config, logger, overrides = {}) =>
  wireWith(
    async (closers) => {
      const tokens = tokensFor(config.INTERNAL_TOKEN_SECRET, overrides.tokens);

      // The variable wins, then the override, then the local default (see compose).
      const { store, publisher } = await composeStoreAndPublisher<IdentityStore>(
        'identity',
        { config, logger, closers },
        overrides,
        { mongo: MongoIdentityStore.create, memory: () => new MemoryIdentityStore() },
      );

      const deps: Deps = {
        store,
        publisher,
        tokens,
        ...loggerAndClock(overrides, logger),
        stagingKeyTtlMs: overrides.stagingKeyTtlMs ?? config.STAGING_KEY_TTL_HOURS * 3_600_000,
        stagingSweepIntervalMs: overrides.stagingSweepIntervalMs ?? config.STAGING_KEY_SWEEP_INTERVAL_MS,
        credentialFeedTickMs: config.CREDENTIAL_FEED_TICK_MS,
        rotationGraceSeconds: overrides.rotationGraceSeconds ?? config.KEY_ROTATION_GRACE_SECONDS,
        wallet: overrides.wallet ?? (await walletVerifierFromConfig(config)),
      };
      return deps;
    },
    (err) => logger.warn({ err }, 'close failed'),
  );
