import { type Logger } from '@mandate/shared/observability';
import { DEFAULT_SNAPSHOT_PREFIX, snapshotKey } from '@mandate/shared/mandate';
import {
  describeRedis,
  newRedis,
  redisClock,
  type RedisClient,
  type RedisTarget,
} from '@mandate/shared/data';

/**
 * Where verify finds mandate snapshots. The mandates service writes them (forward-only, fenced
 * before every lifecycle change; see docs/DEPLOYMENT.md, "Consistency and expiry"); verify only reads.
 */
/** A snapshot as stored: the mandate's JSON and the MAC the mandates service wrote with it (null when absent). */
export interface StoredSnapshot {
  json: string;
  mac: string | null;
}

export interface SnapshotSource {
  readonly kind: 'redis' | 'memory';
  /** The snapshot when it is usable (present and not below its fence), else null; its MAC is the reader's to check. Throws when the store fails. */
  read(tenantId: string, mandateId: string): Promise<StoredSnapshot | null>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Applies the reading rule to the hash fields [v, min, m, s]: usable only when v ≥ min. */
export function usableSnapshot(fields: (string | null)[]): StoredSnapshot | null {
  const [v, min, m, s] = fields;
  if (m == null || v == null) return null;
  return Number(v) >= Number(min ?? 0) ? { json: m, mac: s ?? null } : null;
}

export class RedisSnapshotSource implements SnapshotSource {
  readonly kind = 'redis' as const;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix = DEFAULT_SNAPSHOT_PREFIX,
    private readonly owned = false,
  ) {}

  static async connect(
    target: string | RedisTarget,
    logger: Logger,
    prefix = DEFAULT_SNAPSHOT_PREFIX,
  ): Promise<RedisSnapshotSource> {
    const redis = newRedis(
      target,
      {
        lazyConnect: true,
        // A slow or absent Redis must not hold a verify: fail fast and read from the mandates service.
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        commandTimeout: 500,
        connectTimeout: 2_000,
      },
      // Concurrent verifies share one write per turn of the event loop.
      { batchWrites: true },
    );
    redis.on('error', (err) => logger.warn({ err: err.message }, 'snapshot source: redis error'));
    await redis.connect();
    logger.info({ redis: describeRedis(target), prefix }, 'verify reads mandate snapshots from Redis');
    return new RedisSnapshotSource(redis, prefix, true);
  }

  async read(tenantId: string, mandateId: string): Promise<StoredSnapshot | null> {
    return usableSnapshot(
      await this.redis.hmget(snapshotKey(this.prefix, tenantId, mandateId), 'v', 'min', 'm', 's'),
    );
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }

  /** Redis's clock, epoch milliseconds: the one verify decides time on (docs/DECISIONS.md, "Time"). */
  time(): Promise<number> {
    // The key only picks the Cluster master whose clock is read: the same as mandates'.
    return redisClock(this.redis, `${this.prefix}clock`);
  }

  async close(): Promise<void> {
    if (this.owned) await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
