import { type Logger } from '@mandate/shared/observability';
import {
  awaitReplica,
  failFastRedis,
  waitUntilReady,
  type RedisClient,
  type RedisTarget,
} from '@mandate/shared/data';
import type { IdempotencyRecord, IdempotencyStore, PendingLock, StoredResponse } from './store';

// GET, and SET NX PX only if absent, in one atomic round trip: the lock and the read of a record already there.
const ACQUIRE_LUA = `
local current = redis.call('GET', KEYS[1])
if current then return current end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX')
return false`;
// Only the holder of the pending lock (the exact value it wrote) may replace it, or the first to
// answer once the key is gone (its lock lapsed, or Redis restarted empty while the request ran): the
// work was done, so the retry the client sends next must get this answer, not run it again
// (docs/API.md, "Idempotency"). Another request's lock or record is left alone.
const COMPLETE_LUA = `
local current = redis.call('GET', KEYS[1])
if current == ARGV[1] or not current then redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) return 1 end
return 0`;
const RENEW_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`;
const RELEASE_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) return 1 end
return 0`;

type IdemClient = RedisClient & {
  idemAcquire(key: string, pending: string, leaseMs: string): Promise<string | null>;
  idemRenew(key: string, pending: string, leaseMs: string): Promise<number>;
  idemComplete(key: string, pending: string, done: string, ttlMs: string): Promise<number>;
  idemRelease(key: string, pending: string): Promise<number>;
};

const pendingValue = (p: PendingLock) =>
  JSON.stringify({ state: 'pending', fingerprint: p.fingerprint, token: p.token });

/**
 * Records in Redis, shared by every gateway replica, under `<prefix>:<scope>:<key>`. Like the
 * limiter's connection, commands fail at once while disconnected (no offline queue) so a request
 * with a key gets a prompt 503 instead of hanging behind reconnects.
 */
export class RedisIdempotencyStore implements IdempotencyStore {
  readonly kind = 'redis' as const;
  private readonly client: IdemClient;

  constructor(
    url: string | RedisTarget,
    private readonly prefix: string,
    private readonly logger: Logger,
  ) {
    this.client = failFastRedis(url) as IdemClient;
    this.client.defineCommand('idemAcquire', { numberOfKeys: 1, lua: ACQUIRE_LUA });
    this.client.defineCommand('idemRenew', { numberOfKeys: 1, lua: RENEW_LUA });
    this.client.defineCommand('idemComplete', { numberOfKeys: 1, lua: COMPLETE_LUA });
    this.client.defineCommand('idemRelease', { numberOfKeys: 1, lua: RELEASE_LUA });
    this.client.on('ready', () => this.logger.info('idempotency store connected to Redis'));
    this.client.on('error', (err) =>
      this.logger.debug({ err: err.message }, 'idempotency Redis connection error'),
    );
  }

  /** Waits for the first connection, at most `timeoutMs`; requests with a key answer 503 until it is there. */
  async ready(timeoutMs = 3000): Promise<void> {
    if (!(await waitUntilReady(this.client, timeoutMs)))
      this.logger.warn('Redis unreachable: requests with an Idempotency-Key answer 503 until it is back');
  }

  private name(scope: string, key: string) {
    return `${this.prefix}:${scope}:${key}`;
  }

  /**
   * A lock taken is held by a replica before the request runs, and an answer kept is held by one
   * before it leaves (docs/DECISIONS.md, "Redis failover"): a record only the old master had would
   * be lost with it, and the retry would run again on the promoted replica. A lock no replica
   * acknowledged is dropped again and the request refused (503), so nothing ran.
   */
  async acquire(scope: string, key: string, pending: PendingLock, leaseMs: number) {
    const name = this.name(scope, key);
    const current = await this.client.idemAcquire(name, pendingValue(pending), String(leaseMs));
    if (current !== null) return JSON.parse(current) as IdempotencyRecord;
    try {
      await awaitReplica(this.client, name);
    } catch (err) {
      await this.release(scope, key, pending).catch(() => undefined);
      throw err;
    }
    return null;
  }

  async renew(scope: string, key: string, pending: PendingLock, leaseMs: number) {
    await this.client.idemRenew(this.name(scope, key), pendingValue(pending), String(leaseMs));
  }

  async complete(scope: string, key: string, pending: PendingLock, response: StoredResponse, ttlMs: number) {
    const done: IdempotencyRecord = { state: 'done', fingerprint: pending.fingerprint, response };
    const name = this.name(scope, key);
    await this.client.idemComplete(name, pendingValue(pending), JSON.stringify(done), String(ttlMs));
    await awaitReplica(this.client, name);
  }

  async release(scope: string, key: string, pending: PendingLock) {
    await this.client.idemRelease(this.name(scope, key), pendingValue(pending));
  }

  async close(): Promise<void> {
    if (this.client.status === 'end') return;
    try {
      if (this.client.status !== 'ready') throw new Error('not connected');
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }
}
