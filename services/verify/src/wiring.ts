import { configError, redisKeySpaces } from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import { snapshotMac } from '@mandate/shared/mandate';
import {
  BatchingPublisher,
  JournaledPublisher,
  InProcessBus,
  RabbitPublisher,
  SpoolingPublisher,
  amqpTopology,
  defaultSpoolDir,
  type EventPublisher,
} from '@mandate/shared/events';
import { type RedisTarget, type TimeSource, redisTarget } from '@mandate/shared/data';
import {
  compose,
  tokensFor,
  loggerAndClock,
  decisionClock,
  type Closers,
  wireWith,
  type Wire,
} from '@mandate/shared/service';
import type { Deps } from './deps';
import type { Config } from './config';
import { CountingPublisher } from './events/counting-publisher';
import { HttpMandateReader } from './mandates/http-mandate-reader';
import type { MandateReader } from './mandates/mandate-reader';
import { SnapshotMandateReader } from './mandates/snapshot-mandate-reader';
import { RedisSnapshotSource } from './mandates/snapshot-source';
import { VerifyMetrics } from './metrics';

/**
 * Builds the dependencies in one place. Each adapter is chosen by its setting, else the one
 * the caller (the embedded launcher, a test) passes, else the local default. Verify keeps no state of its own, so
 * any number of replicas can run side by side.
 */
export const wire: Wire<Config, Deps> = async (config, logger, overrides = {}) => {
  const metrics = overrides.metrics ?? new VerifyMetrics();

  return wireWith(async (closers) => {
    const ctx: WireContext = { config, logger, metrics, closers };
    const { reader, redisClock } = await wireReader(ctx, overrides.reader);
    const publisher = await wirePublisher(ctx, overrides.publisher);
    const tokens = tokensFor(config.INTERNAL_TOKEN_SECRET, overrides.tokens);

    const deps: Deps = {
      reader,
      publisher,
      tokens,
      ...loggerAndClock(overrides, logger),
      clock: await decisionClock(overrides.clock, redisClock, { logger, closers, what: 'verify decides' }),
      metrics,
      publicBaseUrl: overrides.publicBaseUrl ?? config.PUBLIC_BASE_URL,
    };
    return deps;
  });
};

/** What every wire* helper below needs. */
interface WireContext {
  config: Config;
  logger: Logger;
  metrics: VerifyMetrics;
  closers: Closers;
}

/**
 * The mandate reader: over HTTP from MANDATES_URL, with Redis snapshots in front when REDIS_URL is
 * set (then Redis's clock decides, docs/DECISIONS.md, "Time"), else the override.
 */
async function wireReader(
  ctx: WireContext,
  override: MandateReader | undefined,
): Promise<{ reader: MandateReader; redisClock?: TimeSource }> {
  const { config, logger, metrics, closers } = ctx;
  let redisClock: TimeSource | undefined;
  // Each adapter by the one composition rule (compose): the variable, else the override, else the local default.
  const { adapter: reader } = await compose<MandateReader, string[]>({
    variable: config.MANDATES_URL,
    fromVariable: async (baseUrls) => {
      const http = new HttpMandateReader({
        baseUrls,
        logger,
        timeoutMs: config.MANDATES_TIMEOUT_MS,
        metrics,
      });
      logger.info({ mandates: baseUrls }, 'mandates read over HTTP');
      // Snapshots only with REDIS_URL (which always gives a target, cluster nodes or not).
      const redis = config.REDIS_URL ? redisTarget(config) : undefined;
      if (!redis) {
        logger.warn(
          'REDIS_URL not set: no snapshots, every verify reads its mandate from the mandates service',
        );
        closers.add(() => http.close());
        return http;
      }
      const snapshots = await snapshotReader(ctx, redis, http);
      redisClock = snapshots.clock;
      return snapshots.reader;
    },
    override,
    local: () => {
      throw configError('MANDATES_URL', 'is required: the mandates service, comma-separated replicas');
    },
  });
  return { reader, redisClock };
}

/** Snapshots read from Redis, MAC'd with INTERNAL_TOKEN_SECRET, over the HTTP reader. */
async function snapshotReader(
  ctx: WireContext,
  redis: RedisTarget,
  http: HttpMandateReader,
): Promise<{ reader: MandateReader; clock: TimeSource }> {
  const { config, logger, metrics, closers } = ctx;
  const source = await RedisSnapshotSource.connect(
    redis,
    logger,
    redisKeySpaces(config.REDIS_PREFIX).snapshots,
  ).catch(async (err) => {
    await http.close();
    throw err;
  });
  if (!config.INTERNAL_TOKEN_SECRET) {
    await Promise.all([source.close(), http.close()]);
    throw configError(
      'INTERNAL_TOKEN_SECRET',
      "is required with REDIS_URL (it keys the snapshot MAC); set mandates' value",
    );
  }
  const snapshots = new SnapshotMandateReader(
    source,
    http,
    metrics,
    logger,
    snapshotMac(config.INTERNAL_TOKEN_SECRET),
  );
  closers.add(() => snapshots.close());
  return { reader: snapshots, clock: () => source.time() };
}

/** VERIFICATION_PERFORMED events: RabbitMQ when AMQP_URL is set, else the override, else an in-process bus. */
async function wirePublisher(
  ctx: WireContext,
  override: EventPublisher | undefined,
): Promise<EventPublisher> {
  const { config, logger, metrics, closers } = ctx;
  const { adapter: publisher } = await compose<EventPublisher>({
    variable: config.AMQP_URL,
    fromVariable: async (url) => {
      const rabbit = new RabbitPublisher(url, logger, amqpTopology(config.AMQP_NAMESPACE));
      // Close the outermost layer: the rabbit publisher, until the batcher below wraps it.
      let outermost: EventPublisher = rabbit;
      closers.add(() => outermost.close());
      await rabbit.connect();
      // A broker outage loses no VERIFICATION_PERFORMED: failed batches go to a bounded, fsync'd
      // local spool and are replayed in order when the broker is back.
      const dir = config.EVENT_SPOOL_DIR ?? defaultSpoolDir('verify', config.AMQP_NAMESPACE, config.PORT);
      const spool = await SpoolingPublisher.open(
        new CountingPublisher(rabbit, () => metrics.brokerPublishes++),
        { dir, maxBytes: config.EVENT_SPOOL_MAX_MB * 1024 * 1024, logger },
      );
      // One confirm round trip per batch instead of one per verify; the counter sees each batch.
      const batching = new BatchingPublisher(spool, {
        maxBatch: config.PUBLISH_BATCH_MAX,
        maxDelayMs: config.PUBLISH_BATCH_DELAY_MS,
      });
      // The batcher flushes (into the spool if the broker is away), then closes the spool and the rabbit publisher.
      outermost = batching;
      // A SIGKILL loses no VERIFICATION_PERFORMED of an answered verify either: each is journaled
      // (one synchronous write) before the answer, and replayed by the next start until settled.
      const journaled = await JournaledPublisher.open(batching, { dir, logger });
      outermost = journaled;
      return journaled;
    },
    override,
    local: () => {
      // Nothing consumes this bus in a standalone verify: events are only kept in memory.
      const bus = new InProcessBus(logger);
      closers.add(() => bus.close());
      logger.warn('AMQP_URL not set: audit events go to an in-process bus');
      return bus;
    },
  });
  return publisher;
}
