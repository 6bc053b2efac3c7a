import { Redis } from 'ioredis';
import type { Logger } from '@mandate/shared';

/**
 * Where verify finds mandate snapshots. The mandates service writes them (forward-only, fenced
 * before every lifecycle change; see its README "Consistency"); verify only reads.
 */
export interface SnapshotSource {
  readonly kind: 'redis' | 'memory';
  /** The snapshot's JSON when it is usable (present and not below its fence), else null. Throws when the store fails. */
  read(tenantId: string, mandateId: string): Promise<string | null>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export const DEFAULT_SNAPSHOT_PREFIX = 'mandate:snapshot:';

/** The mandates service's key layout: a hash with v (version), m (mandate JSON), min (fence). */
export const snapshotKey = (prefix: string, tenantId: string, mandateId: string) =>
  `${prefix}${tenantId}:${mandateId}`;

/** Applies the reading rule to the hash fields [v, min, m]: usable only when v ≥ min. */
export function usableSnapshot(fields: (string | null)[]): string | null {
  const [v, min, m] = fields;
  if (m == null || v == null) return null;
  return Number(v) >= Number(min ?? 0) ? m : null;
}

export class RedisSnapshotSource implements SnapshotSource {
  readonly kind = 'redis' as const;

  constructor(
    private readonly redis: Redis,
    private readonly prefix = DEFAULT_SNAPSHOT_PREFIX,
    private readonly owned = false,
  ) {}

  static async connect(
    url: string,
    logger: Logger,
    prefix = DEFAULT_SNAPSHOT_PREFIX,
  ): Promise<RedisSnapshotSource> {
    const redis = new Redis(url, {
      lazyConnect: true,
      // Concurrent verifies share one round trip per event-loop tick.
      enableAutoPipelining: true,
      // A slow or absent Redis must not hold a verify: fail fast and read from the mandates service.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 500,
      connectTimeout: 2_000,
    });
    redis.on('error', (err) => logger.warn({ err: err.message }, 'snapshot source: redis error'));
    await redis.connect();
    const { host, port, db } = redis.options;
    logger.info({ redis: `${host}:${port}/${db ?? 0}`, prefix }, 'verify reads mandate snapshots from Redis');
    return new RedisSnapshotSource(redis, prefix, true);
  }

  async read(tenantId: string, mandateId: string): Promise<string | null> {
    return usableSnapshot(
      await this.redis.hmget(snapshotKey(this.prefix, tenantId, mandateId), 'v', 'min', 'm'),
    );
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }

  async close(): Promise<void> {
    if (this.owned) await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
