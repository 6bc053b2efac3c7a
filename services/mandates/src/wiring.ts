import { configError, redisKeySpaces } from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import { snapshotMac } from '@mandate/shared/mandate';
import { type TimeSource, redisTarget } from '@mandate/shared/data';
import {
  compose,
  composeStoreAndPublisher,
  loggerAndClock,
  decisionClock,
  tokensFor,
  type Closers,
  wireWith,
  type Wire,
} from '@mandate/shared/service';
import type { Deps } from './deps';
import type { IdentityVerifications } from './domain/mandates';
import type { Config } from './config';
import { createSigner, kmsKeyIds } from './signing/select';
import type { Signer } from './signing/signer';
import type { MandateStore } from './store/mandate-store';
import { MemoryMandateStore } from './store/memory-mandate-store';
import { MongoMandateStore } from './store/mongo-mandate-store';
import { NoSnapshots, type MandateSnapshots } from './snapshots/mandate-snapshots';
import { RedisSnapshots } from './snapshots/redis-snapshots';
import { HttpIdentityVerifications } from './identity/identity-verifications';

/**
 * Builds every dependency from configuration: each *_URL switches its adapter on, over any
 * override; without them the override or the embedded default (memory store, in-process bus,
 * no snapshots, generated signing key).
 * `close()` closes only what was created here, not the overrides.
 */
export const wire: Wire<Config, Deps> = (config, logger, overrides = {}) =>
  wireWith(async (closers) => {
    // Each adapter by the one composition rule (compose): the variable, else the override, else the local default.
    const { store, publisher } = await composeStoreAndPublisher<MandateStore>(
      'mandates',
      { config, logger, closers },
      overrides,
      { mongo: MongoMandateStore.create, memory: () => new MemoryMandateStore() },
      'mandates: in-process event bus (no AMQP_URL); events reach no other process',
    );

    const signer = await wireSigner(config, logger, closers, overrides.signer);
    const tokens = tokensFor(config.INTERNAL_TOKEN_SECRET, overrides.tokens);

    const { snapshots, redisClock } = await wireSnapshots(config, logger, closers, overrides.snapshots);

    const deps: Deps = {
      store,
      publisher,
      signer,
      tokens,
      ...loggerAndClock(overrides, logger),
      clock: await decisionClock(overrides.clock, redisClock, {
        logger,
        closers,
        what: 'mandates decides expiry and validity',
      }),
      snapshots,
      sweepIntervalMs: overrides.sweepIntervalMs ?? config.EXPIRY_SWEEP_INTERVAL_MS,
      publicBaseUrl: overrides.publicBaseUrl ?? config.PUBLIC_BASE_URL,
      statusListTtlSeconds: overrides.statusListTtlSeconds ?? config.STATUS_LIST_TTL_SECONDS,
      identityVerifications: (
        await compose<IdentityVerifications | undefined, string[]>({
          variable: config.IDENTITY_URL,
          fromVariable: (urls) => {
            const identity = new HttpIdentityVerifications(urls, tokens, logger);
            closers.add(() => identity.close());
            return identity;
          },
          override: overrides.identityVerifications,
          // Without identity, a request naming a verification is refused (nothing can consume it).
          local: () => undefined,
        })
      ).adapter,
    };
    return deps;
  });

/**
 * The signer by the composition rule: a key the variables name (KMS_KEY_ID / SIGNING_KEY_IDS,
 * LOCAL_SIGNING_KEY, LOCAL_SIGNING_KEY_FILE), else the override, else a generated key.
 */
async function wireSigner(
  config: Config,
  logger: Logger,
  closers: Closers,
  override: Signer | undefined,
): Promise<Signer> {
  const signingVariables =
    kmsKeyIds(config).length > 0 || config.LOCAL_SIGNING_KEY || config.LOCAL_SIGNING_KEY_FILE
      ? config
      : undefined;
  const { adapter } = await compose<Signer, Config>({
    variable: signingVariables,
    fromVariable: () => ownSigner(),
    override,
    local: () => ownSigner(),
  });
  async function ownSigner() {
    // KMS when KMS_KEY_ID / SIGNING_KEY_IDS are set, else the local key; logs which one.
    const created = await createSigner(config, logger);
    closers.add(() => created.close());
    return created.signer;
  }
  return adapter;
}

/** Snapshots in Redis (with Redis's clock) when REDIS_URL is set, else the override or none. */
async function wireSnapshots(
  config: Config,
  logger: Logger,
  closers: Closers,
  override: MandateSnapshots | undefined,
): Promise<{ snapshots: MandateSnapshots; redisClock: TimeSource | undefined }> {
  // Redis's clock when there are snapshots in Redis (docs/DECISIONS.md, "Time").
  let redisClock: TimeSource | undefined;
  const { adapter: snapshots } = await compose<MandateSnapshots>({
    variable: config.REDIS_URL,
    fromVariable: async () => {
      // Verify trusts a snapshot only with its MAC, so one keyed like verify's is needed to write any.
      if (!config.INTERNAL_TOKEN_SECRET)
        throw configError(
          'INTERNAL_TOKEN_SECRET',
          "is required with REDIS_URL (it keys the snapshot MAC); set verify's value",
        );
      const redis = await RedisSnapshots.connect(redisTarget(config)!, logger, {
        mac: snapshotMac(config.INTERNAL_TOKEN_SECRET),
        prefix: redisKeySpaces(config.REDIS_PREFIX).snapshots,
        ttlSeconds: config.SNAPSHOT_TTL_SECONDS,
      });
      closers.add(() => redis.close());
      redisClock = () => redis.time();
      return redis;
    },
    override,
    local: () => {
      logger.warn(
        'mandates: no REDIS_URL, no mandate snapshots (verify reads every mandate from this service)',
      );
      return new NoSnapshots();
    },
  });
  return { snapshots, redisClock };
}
