import type { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes, type RateLimiterLike } from 'rate-limiter-flexible';
import { redactUrl, serviceUnavailable, type Logger } from '@mandate/shared';
import { failFastRedis, waitUntilReady } from '../fail-fast-redis';
import type { Bucket } from './plans';
import { MemoryQuota } from './memory-quota';
import { GCRA_LUA, MemoryTokenBucket } from './token-bucket';
import type { AtomicPart, LimiterBackend } from './limiter';

const GCRA_COMMAND = 'gatewayGcra';
const LIMITS_COMMAND = 'gatewayLimits';
type GcraClient = Redis & {
  [GCRA_COMMAND](key: string, points: string, burst: string, rate: string): Promise<[number, number]>;
  [LIMITS_COMMAND](...keysThenArgs: string[]): Promise<number[]>;
};

/**
 * Every limit of one request in one script call, all or nothing: each part is checked with the
 * same arithmetic as GCRA_LUA (a bucket: `b`, burst, rate) or rate-limiter-flexible's counter
 * script (the quota: `q`, points, expiry seconds), against one reading of Redis's clock; only when
 * every part passes are the new values written (the same keys and value formats as those scripts,
 * so both paths and older replicas share the counters). A rejected request takes nothing, so it
 * needs no refund. Returns, per part, [consumed, msBeforeNext] in the shape of those scripts.
 * KEYS of one request must live on one node (a Redis Cluster would need a hash tag per caller).
 */
const LIMITS_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local out = {}
local writes = {}
local allowed = true
for i = 1, #KEYS do
  local kind = ARGV[3 * i - 2]
  local a = tonumber(ARGV[3 * i - 1])
  local b = tonumber(ARGV[3 * i])
  if kind == 'b' then
    local interval = 1000 / b
    local capacity = a * interval
    local tat = tonumber(redis.call('GET', KEYS[i]) or now)
    if tat < now then tat = now end
    local nxt = tat + interval
    if nxt - now > capacity + 0.001 then
      allowed = false
      out[2 * i - 1] = a + 1
      out[2 * i] = math.ceil(nxt - now - capacity)
    else
      writes[i] = nxt
      out[2 * i - 1] = a - math.floor((capacity - (nxt - now)) / interval + 0.001)
      out[2 * i] = math.ceil(nxt - now)
    end
  else
    local consumed = tonumber(redis.call('GET', KEYS[i]) or '0') + 1
    if consumed > a then allowed = false end
    local ttl = redis.call('PTTL', KEYS[i])
    if ttl < 0 then ttl = b * 1000 end
    out[2 * i - 1] = consumed
    out[2 * i] = ttl
  end
end
if allowed then
  for i = 1, #KEYS do
    if writes[i] then
      redis.call('SET', KEYS[i], string.format('%.3f', writes[i]), 'PX', math.ceil(writes[i] - now))
    else
      local b = ARGV[3 * i]
      redis.call('SET', KEYS[i], 0, 'EX', b, 'NX')
      redis.call('INCRBY', KEYS[i], 1)
      if redis.call('PTTL', KEYS[i]) == -1 then redis.call('EXPIRE', KEYS[i], b) end
    end
  end
end
return out
`;

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
const redactRedisUrl = (url: string) => redactUrl(url, 'REDIS_URL');

const DEGRADED = 'degraded: per-process limiter (Redis unreachable)';

/**
 * Limiters on one ioredis connection. Auto-pipelining sends the commands of every limiter that
 * applies to a request (and of concurrent requests) in one write: one round trip per request.
 */
export class RedisLimiterBackend implements LimiterBackend {
  private readonly client: GcraClient;
  private state: 'starting' | 'shared' | 'degraded' | 'closing' = 'starting';

  constructor(
    private readonly url: string,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.client = failFastRedis(url) as GcraClient;
    this.client.defineCommand(GCRA_COMMAND, { numberOfKeys: 1, lua: GCRA_LUA });
    this.client.defineCommand(LIMITS_COMMAND, { lua: LIMITS_LUA });
    this.client.on('ready', () => {
      if (this.state === 'degraded')
        this.logger.info(
          { redis: redactRedisUrl(this.url) },
          'Redis reachable again: rate limits are shared across replicas again',
        );
      else this.logger.info({ redis: redactRedisUrl(this.url) }, 'rate limiter connected to Redis');
      this.state = 'shared';
    });
    this.client.on('close', () => this.degrade());
    // ioredis repeats 'error' on every reconnect attempt; the transition is logged once, in degrade().
    this.client.on('error', (err) => this.logger.debug({ err: err.message }, 'Redis connection error'));
  }

  private degrade() {
    // Our own close() also ends the connection: that is a shutdown, not an outage worth a warning.
    if (this.state === 'degraded' || this.state === 'closing') return;
    this.state = 'degraded';
    this.logger.warn(
      { redis: redactRedisUrl(this.url) },
      'Redis unreachable: rate limits fall back to a per-process limiter until it returns',
    );
  }

  /** Waits for the first connection, at most `timeoutMs`; the gateway serves (degraded) either way. */
  async ready(timeoutMs = 3000): Promise<void> {
    if (!(await waitUntilReady(this.client, timeoutMs))) this.degrade();
  }

  private readonly insurers = new WeakMap<RateLimiterLike, RateLimiterLike>();

  bucket(keyPrefix: string, bucket: Bucket): RateLimiterLike {
    const insurance = new MemoryTokenBucket(bucket, keyPrefix, this.now);
    const limiter = new RedisTokenBucket(this.client, bucket, keyPrefix, insurance);
    this.insurers.set(limiter, insurance);
    return limiter;
  }

  quota(keyPrefix: string, points: number): RateLimiterLike {
    const insurance = new MemoryQuota(points, keyPrefix, this.now);
    const limiter = new RateLimiterRedis({
      storeClient: this.client,
      rejectIfRedisNotReady: true,
      keyPrefix,
      points,
      // Each call passes the time to the end of its month as customDuration.
      duration: 0,
      insuranceLimiter: insurance,
    });
    this.insurers.set(limiter, insurance);
    return limiter;
  }

  /** SCAN for the counters (a tenant's callers in one month: a handful of keys), then one MGET. */
  async quotaCounters(keyPrefix: string, start: string, end: string): Promise<Map<string, number>> {
    try {
      return await this.scanCounters(keyPrefix, start, end);
    } catch (err) {
      this.logger.warn({ err }, 'quota counters not read from Redis');
      throw serviceUnavailable('The shared quota counters cannot be read now (Redis)');
    }
  }

  private async scanCounters(keyPrefix: string, start: string, end: string): Promise<Map<string, number>> {
    if (this.client.status !== 'ready') throw new Error('Redis connection is not ready');
    const head = `${keyPrefix}:${start}`;
    const glob = (text: string) => text.replace(/[*?[\]\\]/g, '\\$&');
    const keys = new Set<string>();
    let cursor = '0';
    do {
      const [next, batch] = await this.client.scan(
        cursor,
        'MATCH',
        `${glob(head)}*${glob(end)}`,
        'COUNT',
        1000,
      );
      cursor = next;
      for (const k of batch) keys.add(k);
    } while (cursor !== '0');
    const found = new Map<string, number>();
    const list = [...keys].filter((k) => k.length >= head.length + end.length);
    if (list.length === 0) return found;
    const values = await this.client.mget(...list);
    list.forEach((k, i) => {
      const n = Number(values[i] ?? 0);
      if (n > 0) found.set(k.slice(head.length, k.length - end.length), n);
    });
    return found;
  }

  insurance(limiter: RateLimiterLike): RateLimiterLike {
    return this.insurers.get(limiter) ?? limiter;
  }

  /** One script call for all the limits of a request (see LIMITS_LUA); rejects at once while Redis is not connected. */
  async consumeAll(parts: AtomicPart[]): Promise<RateLimiterRes[]> {
    if (this.client.status !== 'ready') throw new Error('Redis connection is not ready');
    const n = parts.length;
    const args: string[] = [String(n)];
    for (const p of parts) args.push(p.rlKey);
    for (const p of parts) {
      if (p.kind === 'rate') args.push('b', String(p.bucket.burst), String(p.bucket.rate));
      else args.push('q', String(p.points), String(p.seconds));
    }
    const out = await this.client[LIMITS_COMMAND](...args);
    const results: RateLimiterRes[] = [];
    for (let i = 0; i < n; i++) {
      const p = parts[i]!;
      const consumed = out[2 * i]!;
      const limit = p.kind === 'rate' ? p.bucket.burst : p.points;
      results.push(new RateLimiterRes(Math.max(limit - consumed, 0), out[2 * i + 1]!, consumed, false));
    }
    return results;
  }

  health(): string {
    return this.state === 'shared' ? 'ok' : DEGRADED;
  }

  async close(): Promise<void> {
    if (this.client.status === 'end') return;
    this.state = 'closing';
    try {
      if (this.client.status !== 'ready') throw new Error('not connected');
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }
}
