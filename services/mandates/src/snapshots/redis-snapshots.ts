import { type Logger } from '@mandate/shared/observability';
import { DEFAULT_SNAPSHOT_PREFIX, snapshotKey, type SnapshotMac } from '@mandate/shared/mandate';
import {
  awaitReplica,
  describeRedis,
  newRedis,
  redisClock,
  type RedisClient,
  type RedisTarget,
} from '@mandate/shared/data';
import type { Mandate } from '../domain/mandate';
import { DEFAULT_SNAPSHOT_TTL_SECONDS, type MandateSnapshots } from './mandate-snapshots';

/**
 * Compare-and-set on the version, atomically in Redis: written only when newer than the stored
 * snapshot and not below the fence, or at the same version when the stored one has no MAC (written
 * before snapshots were signed: verify ignores it, so every read would go to this service until the
 * next change). (HMGET of a missing field is false; tonumber(false) is nil.)
 */
const WRITE_SNAPSHOT = `
local f = redis.call('HMGET', KEYS[1], 'v', 'min', 's')
local cur = tonumber(f[1]) or 0
local min = tonumber(f[2]) or 0
local v = tonumber(ARGV[1])
if v < cur or v < min or (v == cur and f[3]) then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'm', ARGV[2], 's', ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
`;

/** Raises the fence only (never lowers it); the snapshot itself is left for readers to compare. */
const FENCE_SNAPSHOT = `
local min = tonumber(redis.call('HGET', KEYS[1], 'min')) or 0
local v = tonumber(ARGV[1])
if v > min then redis.call('HSET', KEYS[1], 'min', ARGV[1]) end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
`;

interface SnapshotCommands {
  writeSnapshot(key: string, version: number, json: string, ttl: number, mac: string): Promise<number>;
  fenceSnapshot(key: string, version: number, ttl: number): Promise<number>;
}

export interface RedisSnapshotsOptions {
  /** Signs each snapshot's JSON (field `s`); verify ignores a snapshot whose MAC fails. */
  mac: SnapshotMac;
  prefix?: string;
  ttlSeconds?: number;
}

export class RedisSnapshots implements MandateSnapshots {
  readonly kind = 'redis' as const;
  private readonly prefix: string;
  private readonly ttl: number;
  private readonly mac: SnapshotMac;

  private constructor(
    private readonly redis: RedisClient & SnapshotCommands,
    private readonly owned: boolean,
    options: RedisSnapshotsOptions,
  ) {
    this.prefix = options.prefix ?? DEFAULT_SNAPSHOT_PREFIX;
    this.ttl = options.ttlSeconds ?? DEFAULT_SNAPSHOT_TTL_SECONDS;
    this.mac = options.mac;
  }

  /** Connects to `target` (fails fast when Redis is unreachable at start) and logs where. */
  static async connect(
    target: string | RedisTarget,
    logger: Logger,
    options: RedisSnapshotsOptions,
  ): Promise<RedisSnapshots> {
    const redis = newRedis(target, {
      lazyConnect: true,
      // A lifecycle call waits for the fence; it must fail (503) rather than queue while Redis is away.
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      connectTimeout: 2_000,
      commandTimeout: 1_000,
    });
    redis.on('error', (err) => logger.warn({ err: err.message }, 'mandate snapshots: redis error'));
    await redis.connect();
    const snapshots = RedisSnapshots.over(redis, options, true);
    logger.info({ redis: describeRedis(target), prefix: snapshots.prefix }, 'mandate snapshots in Redis');
    return snapshots;
  }

  /** Uses an existing client (tests); close() leaves it open unless `owned`. */
  static over(redis: RedisClient, options: RedisSnapshotsOptions, owned = false): RedisSnapshots {
    redis.defineCommand('writeSnapshot', { numberOfKeys: 1, lua: WRITE_SNAPSHOT });
    redis.defineCommand('fenceSnapshot', { numberOfKeys: 1, lua: FENCE_SNAPSHOT });
    return new RedisSnapshots(redis as RedisClient & SnapshotCommands, owned, options);
  }

  /**
   * Raised, and held by a replica before it returns (docs/DECISIONS.md, "Redis failover"): a fence
   * only the old master had would be lost with it, and the promoted replica would serve the older
   * snapshot. Throws when no connected replica acknowledges it within the bound.
   */
  async fence(tenantId: string, mandateId: string, version: number): Promise<void> {
    const key = snapshotKey(this.prefix, tenantId, mandateId);
    await this.redis.fenceSnapshot(key, version, this.ttl);
    await awaitReplica(this.redis, key);
  }

  async write(mandate: Mandate): Promise<boolean> {
    const key = snapshotKey(this.prefix, mandate.tenant_id, mandate.id);
    const json = JSON.stringify(mandate);
    return (await this.redis.writeSnapshot(key, mandate.version, json, this.ttl, this.mac.sign(json))) === 1;
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }

  /** Redis's clock, epoch milliseconds: the one mandates decides time on (docs/DECISIONS.md, "Time"). */
  time(): Promise<number> {
    // The key only picks the Cluster master whose clock is read: the same as verify's.
    return redisClock(this.redis, `${this.prefix}clock`);
  }

  async close(): Promise<void> {
    if (this.owned) await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
