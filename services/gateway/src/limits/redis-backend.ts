import { RateLimiterRedis, RateLimiterRes, type RateLimiterLike } from 'rate-limiter-flexible';
import { redactUrl, serviceUnavailable } from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import {
  describeRedis,
  failFastRedis,
  isCluster,
  waitUntilReady,
  type RedisClient,
  type RedisTarget,
} from '@mandate/shared/data';
import type { Bucket } from './plans';
import { MemoryQuota } from './memory-quota';
import { GCRA_LUA, MemoryTokenBucket } from './token-bucket';
import type { AtomicPart, LimiterBackend } from './limiter';

const GCRA_COMMAND = 'gatewayGcra';
/**
 * LIMITS_LUA as one command per number of keys (`gatewayLimits3`: three keys, then the arguments).
 * Auto-pipelining groups a Cluster's commands by the slot of their first argument: with the number
 * of keys in front, commands of callers in other slots would share a pipeline, which the Cluster
 * client then refuses whole.
 */
const LIMITS_COMMAND = (keys: number) => `gatewayLimits${keys}`;
/** On one node (or Sentinel): LIMITS_LUA as one command, its number of keys as its first argument. */
const LIMITS_ANY = 'gatewayLimits';
/** The most keys one limits call takes on a Cluster (a caller's parts: its buckets and counters). */
const MAX_LIMITS_KEYS = 64;
type GcraClient = RedisClient & {
  [GCRA_COMMAND](key: string, points: string, burst: string, rate: string): Promise<[number, number]>;
} & Record<string, unknown>;
type LimitsCall = (...keysThenArgs: string[]) => Promise<number[]>;

/**
 * Every limit of one request in one script call, all or nothing: each part is checked with the
 * same arithmetic as GCRA_LUA (a bucket: `b`, burst, rate) or rate-limiter-flexible's counter
 * script (the quota: `q`, points, expiry seconds), against one reading of Redis's clock; only when
 * every part passes is the request's point taken (the same keys and value formats as those
 * scripts, so both paths and older replicas share the counters). A rejected request takes
 * nothing, so it needs no refund. Returns, per part, [consumed, msBeforeNext] in the shape of
 * those scripts.
 *
 * ARGV[1] is the request's points to take (1, or an AuthZEN batch's items), 0 only to report;
 * each part's fourth number is the count of requests this replica already let through on its own
 * (see `RedisLimiterBackend`),
 * added first and unconditionally: they were answered, so a bucket may go into debt (its tat
 * beyond the burst), which later requests then wait out.
 * KEYS of one call belong to one caller: on a Redis Cluster they carry the caller as their hash tag
 * (`hashTags`, limiter.ts callerTag), so they live in one slot.
 */
const LIMITS_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local take = tonumber(ARGV[1])
local out = {}
local tats = {}
local counts = {}
local allowed = true
for i = 1, #KEYS do
  local kind = ARGV[4 * i - 2]
  local a = tonumber(ARGV[4 * i - 1])
  local b = tonumber(ARGV[4 * i])
  local pending = tonumber(ARGV[4 * i + 1])
  if kind == 'b' then
    local interval = 1000 / b
    local capacity = a * interval
    local tat = tonumber(redis.call('GET', KEYS[i]) or now)
    if tat < now then tat = now end
    tat = tat + pending * interval
    tats[i] = tat
    local nxt = tat + take * interval
    if take > 0 and nxt - now > capacity + 0.001 then
      allowed = false
      out[2 * i - 1] = a + take
      out[2 * i] = math.ceil(nxt - now - capacity)
    else
      out[2 * i - 1] = a - math.floor((capacity - (nxt - now)) / interval + 0.001)
      out[2 * i] = math.ceil(nxt - now)
    end
  else
    local count = tonumber(redis.call('GET', KEYS[i]) or '0') + pending
    counts[i] = count
    if count + take > a then allowed = false end
    local ttl = redis.call('PTTL', KEYS[i])
    if ttl < 0 then ttl = b * 1000 end
    out[2 * i - 1] = count + take
    out[2 * i] = ttl
  end
end
local taken = 0
if allowed then taken = take end
for i = 1, #KEYS do
  local add = tonumber(ARGV[4 * i + 1]) + taken
  if add > 0 then
    if tats[i] then
      local tat = tats[i] + taken * (1000 / tonumber(ARGV[4 * i]))
      redis.call('SET', KEYS[i], string.format('%.3f', tat), 'PX', math.max(1, math.ceil(tat - now)))
    else
      local b = ARGV[4 * i]
      redis.call('SET', KEYS[i], 0, 'EX', b, 'NX')
      redis.call('INCRBY', KEYS[i], add)
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

/** How soon the requests let through locally are added to the shared counters. */
const FLUSH_MS = 20;
/** After a failed flush (Redis away), when to try again. */
const RETRY_FLUSH_MS = 1_000;
/** A view older than this is not decided on: the caller's next request asks Redis (and refreshes it). */
const VIEW_MAX_AGE_MS = 2_000;
/** A quota is decided locally only while more than this many points (at most half of it) remain after the request. */
const QUOTA_MARGIN = 1_000;

/** What this replica knows of one shared counter: Redis's last answer and what it let through since. */
interface PartView {
  part: AtomicPart;
  /** The caller the counter belongs to (the first key of its requests): flushed in one call with the caller's other counters. */
  group: string;
  /** Tokens (bucket) or points (quota) left after every call answered so far; negative in debt. */
  remaining: number;
  msBeforeNext: number;
  /** Local time of that answer. */
  at: number;
  /** Requests let through here and sent to Redis, not answered yet. */
  inflight: number;
  /** Requests let through here, not sent yet. */
  unsent: number;
  /**
   * Requests of this replica that Redis is deciding now (sent before the answer this view holds was
   * read, so not in it): each may take a point. A view refreshed while some are on their way would
   * otherwise show their points as still left.
   */
  asking: number;
}

const limitOf = (p: AtomicPart) => (p.kind === 'rate' ? p.bucket.burst : p.points);

/**
 * Whether one more request may be let through without asking Redis: the view is recent, for the
 * same numbers, and after this request at least half the bucket's burst (a quota: half its points,
 * at most QUOTA_MARGIN) would still be left. Each replica thus hands out on its own at most half
 * a burst beyond what it last saw taken, before it asks Redis again: N replicas together can let
 * through at most (N − 1) × burst / 2 more than the bucket holds — half a burst for two, and then
 * only when one view predates the other replica's spending (test: limits.test.ts). Whatever went
 * over is owed: the bucket's tat goes beyond its burst, so later requests wait until it is paid.
 * Refill since the view is ignored (it only makes the estimate stricter).
 */
function decidesLocally(v: PartView, p: AtomicPart, now: number, points: number): boolean {
  if (now - v.at > VIEW_MAX_AGE_MS || limitOf(v.part) !== limitOf(p)) return false;
  const left = v.remaining - v.inflight - v.unsent - v.asking - points;
  const margin = p.kind === 'rate' ? p.bucket.burst / 2 : Math.min(p.points / 2, QUOTA_MARGIN);
  return left >= margin;
}

/** A local decision in rate-limiter-flexible's terms (as the script's answers are). */
function localResult(v: PartView): RateLimiterRes {
  const { part } = v;
  const left = v.remaining - v.inflight - v.unsent - v.asking;
  const limit = limitOf(part);
  // A bucket's reset: the time until it is full again; a quota's: its key's expiry, as Redis said.
  const ms =
    part.kind === 'rate' ? Math.ceil(Math.max(0, limit - left) * (1000 / part.bucket.rate)) : v.msBeforeNext;
  return new RateLimiterRes(Math.max(left, 0), ms, limit - left, false);
}

/** redis://user:secret@host:6379/0 → redis://user:***@host:6379/0, for logs. */
const redactRedisUrl = (target: string | RedisTarget) =>
  typeof target === 'string' ? redactUrl(target, 'REDIS_URL') : describeRedis(target);

const DEGRADED = 'degraded: per-process limiter (Redis unreachable)';

/**
 * Limiters on one ioredis connection. Auto-pipelining sends the commands of every limiter that
 * applies to a request (and of concurrent requests) in one write: one round trip per request.
 */
export class RedisLimiterBackend implements LimiterBackend {
  private readonly client: GcraClient;
  /** A Redis Cluster: a caller's keys share a hash tag (docs/DECISIONS.md, "Redis Cluster"). */
  readonly hashTags: boolean;
  private state: 'starting' | 'shared' | 'degraded' | 'closing' = 'starting';
  /** This replica's view of each shared counter it decides on (see consumeAll), by Redis key. */
  private readonly views = new Map<string, PartView>();
  private flushTimer?: NodeJS.Timeout;
  /** Settles once every flush started so far has (flushes never reject). */
  private flushing: Promise<void> = Promise.resolve();
  private sweepAt = 0;

  constructor(
    private readonly url: string | RedisTarget,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.client = failFastRedis(url) as GcraClient;
    this.hashTags = isCluster(this.client);
    this.client.defineCommand(GCRA_COMMAND, { numberOfKeys: 1, lua: GCRA_LUA });
    // Defined up front: an auto-pipeline created in a tick before a defineCommand lacks the new
    // command, queues its callback without it, and then answers fewer results than callbacks
    // (ioredis throws "results[i] is not iterable" out of the process).
    if (this.hashTags)
      for (let keys = 1; keys <= MAX_LIMITS_KEYS; keys++)
        this.client.defineCommand(LIMITS_COMMAND(keys), { numberOfKeys: keys, lua: LIMITS_LUA });
    else this.client.defineCommand(LIMITS_ANY, { lua: LIMITS_LUA });
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
      // Read your writes: what this replica let through is in the counters it answers with.
      await this.flushNow();
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
    // SCAN sees one node's keys: on a Cluster, every master's (a key moving meanwhile may show twice).
    const nodes = isCluster(this.client) ? this.client.nodes('master') : [this.client];
    for (const node of nodes) {
      let cursor = '0';
      do {
        const [next, batch] = await node.scan(cursor, 'MATCH', `${glob(head)}*${glob(end)}`, 'COUNT', 1000);
        cursor = next;
        for (const k of batch) keys.add(k);
      } while (cursor !== '0');
    }
    const found = new Map<string, number>();
    const list = [...keys].filter((k) => k.length >= head.length + end.length);
    if (list.length === 0) return found;
    // MGET takes keys of one slot on a Cluster: there, one GET each (auto-pipelined per node).
    const values = isCluster(this.client)
      ? await Promise.all(list.map((k) => this.client.get(k)))
      : await this.client.mget(...list);
    list.forEach((k, i) => {
      const n = Number(values[i] ?? 0);
      if (n > 0) found.set(k.slice(head.length, k.length - end.length), n);
    });
    return found;
  }

  insurance(limiter: RateLimiterLike): RateLimiterLike {
    return this.insurers.get(limiter) ?? limiter;
  }

  /**
   * The limits of one request: decided here, from this replica's view of the shared counters,
   * while every part keeps a wide margin (see `decidesLocally`) — no Redis round trip on the
   * request's path; the point taken is added to Redis within FLUSH_MS. Near a limit, or without a
   * recent view, one script call decides (see LIMITS_LUA) and refreshes the view; it rejects at
   * once while Redis is not connected (the insurance limiters then decide).
   */
  async consumeAll(parts: AtomicPart[], points = 1): Promise<RateLimiterRes[]> {
    const now = this.now();
    this.sweep(now);
    const views = parts.map((p) => this.views.get(p.rlKey));
    if (views.every((v, i) => v !== undefined && decidesLocally(v, parts[i]!, now, points))) {
      this.scheduleFlush();
      return views.map((v) => {
        v!.unsent += points;
        return localResult(v!);
      });
    }
    if (this.client.status !== 'ready') throw new Error('Redis connection is not ready');
    const out = await this.call(parts[0]!.rlKey, parts, points);
    const results: RateLimiterRes[] = [];
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i]!;
      const consumed = out[2 * i]!;
      const limit = p.kind === 'rate' ? p.bucket.burst : p.points;
      results.push(new RateLimiterRes(Math.max(limit - consumed, 0), out[2 * i + 1]!, consumed, false));
    }
    return results;
  }

  /**
   * One LIMITS_LUA call for `parts` of one caller (take: the request's points, 0 = only add what
   * was let through here), carrying each part's unsent count; every part's view is then what
   * Redis answered. A failed call gives the counts back to the next call and marks the views stale.
   */
  private async call(group: string, parts: AtomicPart[], take: number): Promise<number[]> {
    const views = parts.map((p) => {
      let v = this.views.get(p.rlKey);
      if (!v) {
        v = {
          part: p,
          group,
          remaining: 0,
          msBeforeNext: 0,
          at: -Infinity,
          inflight: 0,
          unsent: 0,
          asking: 0,
        };
        this.views.set(p.rlKey, v);
      }
      v.part = p;
      return v;
    });
    const sent = views.map((v) => v.unsent);
    const args: string[] = parts.map((p) => p.rlKey);
    args.push(String(take));
    parts.forEach((p, i) => {
      if (p.kind === 'rate') args.push('b', String(p.bucket.burst), String(p.bucket.rate), String(sent[i]));
      else args.push('q', String(p.points), String(p.seconds), String(sent[i]));
    });
    views.forEach((v, i) => {
      v.unsent -= sent[i]!;
      v.inflight += sent[i]!;
      v.asking += take;
    });
    let out: number[];
    try {
      out = await this.limits(parts.length)(...args);
    } catch (err) {
      views.forEach((v, i) => {
        v.inflight -= sent[i]!;
        v.unsent += sent[i]!;
        v.asking -= take;
        v.at = -Infinity;
      });
      throw err;
    }
    const at = this.now();
    views.forEach((v, i) => {
      v.inflight -= sent[i]!;
      v.asking -= take;
      const limit = limitOf(v.part);
      // A rejection reports limit + the points asked (nothing taken): nothing remains either way.
      v.remaining = limit - out[2 * i]!;
      v.msBeforeNext = out[2 * i + 1]!;
      v.at = at;
    });
    return out;
  }

  /** The LIMITS_LUA command for `keys` keys, defined on first use. */
  private limits(keys: number): LimitsCall {
    // One node: the one command, its number of keys in front (as before Cluster support).
    if (!this.hashTags)
      return (...keysThenArgs) =>
        (this.client[LIMITS_ANY] as LimitsCall).call(this.client, String(keys), ...keysThenArgs);
    if (keys > MAX_LIMITS_KEYS) throw new Error(`a limits call of ${keys} keys (at most ${MAX_LIMITS_KEYS})`);
    return (this.client[LIMITS_COMMAND(keys)] as LimitsCall).bind(this.client);
  }

  private async flushNow(): Promise<void> {
    if (this.flushTimer) {
      clearTimeout(this.flushTimer);
      void this.flush();
    }
    // Also the flushes already on their way: on a Cluster a read that follows may go over another
    // connection than they did, so only their answers put them before it.
    await this.flushing;
  }

  private scheduleFlush(delayMs = FLUSH_MS) {
    this.flushTimer ??= setTimeout(() => void this.flush(), delayMs);
  }

  /** Adds what this replica let through to Redis, one call per caller, and refreshes those views. */
  private flush(): Promise<void> {
    this.flushTimer = undefined;
    const sent = this.sendUnsent();
    this.flushing = Promise.all([this.flushing, sent]).then(() => undefined);
    return sent;
  }

  private async sendUnsent(): Promise<void> {
    const groups = new Map<string, AtomicPart[]>();
    for (const v of this.views.values()) {
      if (v.unsent === 0) continue;
      groups.set(v.group, []);
    }
    if (groups.size === 0) return;
    for (const v of this.views.values()) groups.get(v.group)?.push(v.part);
    const calls = [...groups].map(([group, parts]) => {
      if (this.client.status === 'ready')
        return this.call(group, parts, 0).then(
          () => true,
          () => false,
        );
      // Not decided on until Redis answers again: the insurance limiters take over.
      for (const p of parts) this.views.get(p.rlKey)!.at = -Infinity;
      return Promise.resolve(false);
    });
    // Redis away: the counts wait for it (requests meanwhile go to the insurance limiters).
    if ((await Promise.all(calls)).includes(false)) this.scheduleFlush(RETRY_FLUSH_MS);
  }

  /** Drops views no request used for a while (and with nothing left to send). */
  private sweep(now: number) {
    if (now < this.sweepAt) return;
    this.sweepAt = now + VIEW_MAX_AGE_MS;
    for (const [key, v] of this.views)
      if (now - v.at > VIEW_MAX_AGE_MS && v.unsent === 0 && v.inflight === 0 && v.asking === 0)
        this.views.delete(key);
  }

  health(): string {
    return this.state === 'shared' ? 'ok' : DEGRADED;
  }

  async close(): Promise<void> {
    if (this.client.status === 'end') return;
    // What was let through here reaches the shared counters before the connection goes.
    await this.flushNow();
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    this.state = 'closing';
    try {
      if (this.client.status !== 'ready') throw new Error('not connected');
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }
}
