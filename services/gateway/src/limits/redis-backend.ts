import { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes, type RateLimiterLike } from 'rate-limiter-flexible';
import type { Logger } from '@mandate/shared';
import type { Bucket } from './plans';
import { MemoryQuota } from './memory-quota';
import { GCRA_LUA, MemoryTokenBucket } from './token-bucket';
import type { LimiterBackend } from './limiter';

const GCRA_COMMAND = 'gatewayGcra';
type GcraClient = Redis & {
  [GCRA_COMMAND](key: string, points: string, burst: string, rate: string): Promise<[number, number]>;
};

/**
 * The token bucket on Redis: rate-limiter-flexible's Redis limiter with its store hooks
 * (_upsert/_get/_getRateLimiterRes, the contract of its store limiters) running the GCRA script
 * instead of a fixed-window counter, so RLF's insuranceLimiter takes over whenever Redis fails or
 * is not connected.
 */
class RedisTokenBucket extends RateLimiterRedis {
  constructor(
    private readonly redis: GcraClient,
    private readonly bucket: Bucket,
    keyPrefix: string,
    insuranceLimiter: RateLimiterLike,
  ) {
    super({
      storeClient: redis,
      rejectIfRedisNotReady: true,
      points: bucket.burst,
      duration: bucket.burst / bucket.rate,
      keyPrefix,
      insuranceLimiter,
    });
  }

  _upsert(rlKey: string, points: number): Promise<[number, number]> {
    // Not connected: fail now so the insurance limiter answers, instead of queueing behind a reconnect.
    if (this.redis.status !== 'ready') return Promise.reject(new Error('Redis connection is not ready'));
    return this.redis[GCRA_COMMAND](
      rlKey,
      String(points),
      String(this.bucket.burst),
      String(this.bucket.rate),
    );
  }

  _get(rlKey: string) {
    return this._upsert(rlKey, 0);
  }

  _getRateLimiterRes(_rlKey: string, _changed: number, [consumed, ms]: [number, number]) {
    return new RateLimiterRes(Math.max(this.bucket.burst - consumed, 0), ms, consumed, false);
  }
}

/** redis://user:secret@host:6379/0 → redis://user:***@host:6379/0, for logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable REDIS_URL)';
  }
}

const DEGRADED = 'degraded: per-process limiter (Redis unreachable)';

/**
 * Limiters on one ioredis connection. Auto-pipelining sends the commands of every limiter that
 * applies to a request (and of concurrent requests) in one write: one round trip per request.
 */
export class RedisLimiterBackend implements LimiterBackend {
  private readonly client: GcraClient;
  private state: 'starting' | 'shared' | 'degraded' = 'starting';

  constructor(
    private readonly url: string,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.client = new Redis(url, {
      enableAutoPipelining: true,
      // While disconnected, commands fail at once (the insurance limiter answers) rather than wait.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      // A connection that stops answering without closing must not stall requests either.
      commandTimeout: 1000,
      connectTimeout: 2000,
      // close() of a connection that is already gone should not wait for it.
      disconnectTimeout: 200,
      retryStrategy: (times) => Math.min(times * 100, 1000),
    }) as GcraClient;
    this.client.defineCommand(GCRA_COMMAND, { numberOfKeys: 1, lua: GCRA_LUA });
    this.client.on('ready', () => {
      if (this.state === 'degraded')
        this.logger.info(
          { redis: redactUrl(this.url) },
          'Redis reachable again: rate limits are shared across replicas again',
        );
      else this.logger.info({ redis: redactUrl(this.url) }, 'rate limiter connected to Redis');
      this.state = 'shared';
    });
    this.client.on('close', () => this.degrade());
    // ioredis repeats 'error' on every reconnect attempt; the transition is logged once, in degrade().
    this.client.on('error', (err) => this.logger.debug({ err: err.message }, 'Redis connection error'));
  }

  private degrade() {
    if (this.state === 'degraded') return;
    this.state = 'degraded';
    this.logger.warn(
      { redis: redactUrl(this.url) },
      'Redis unreachable: rate limits fall back to a per-process limiter until it returns',
    );
  }

  /** Waits for the first connection, at most `timeoutMs`; the gateway serves (degraded) either way. */
  async ready(timeoutMs = 3000): Promise<void> {
    if (this.client.status === 'ready') return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      this.client.once('ready', done);
      function done() {
        clearTimeout(timer);
        resolve();
      }
    });
    if ((this.client.status as string) !== 'ready') this.degrade();
  }

  bucket(keyPrefix: string, bucket: Bucket): RateLimiterLike {
    return new RedisTokenBucket(
      this.client,
      bucket,
      keyPrefix,
      new MemoryTokenBucket(bucket, keyPrefix, this.now),
    );
  }

  quota(keyPrefix: string, points: number): RateLimiterLike {
    return new RateLimiterRedis({
      storeClient: this.client,
      rejectIfRedisNotReady: true,
      keyPrefix,
      points,
      // Each call passes the time to the end of its month as customDuration.
      duration: 0,
      insuranceLimiter: new MemoryQuota(points, keyPrefix, this.now),
    });
  }

  health(): string {
    return this.state === 'shared' ? 'ok' : DEGRADED;
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
