import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { Bucket } from './plans';

/**
 * A token bucket as GCRA: one number per key, the "theoretical arrival time" (tat) at which the
 * bucket would be full again. Each request moves it `1000 / rate` ms later; a request passes when
 * that leaves the tat at most `burst` intervals ahead of now. So a fresh client gets `burst` at
 * once, and `rate` per second pass when sustained, with no window edges that let 2× through.
 *
 * The result is expressed in rate-limiter-flexible's terms so its insurance machinery applies:
 * consumed > burst means rejected; msBeforeNext is the wait for a token when rejected and the
 * time until the bucket is full again otherwise (the RateLimit-Reset of a bucket).
 */
export interface GcraStep {
  allowed: boolean;
  /** The new tat to store (only when allowed). */
  tat: number;
  consumed: number;
  msBeforeNext: number;
}

// Float sums of 1000/rate can overshoot the capacity by a rounding error; a µs of slack absorbs it.
const EPSILON_MS = 1e-3;

export function gcraStep(
  storedTat: number | undefined,
  now: number,
  points: number,
  bucket: Bucket,
): GcraStep {
  const interval = 1000 / bucket.rate;
  const capacity = bucket.burst * interval;
  const tat = Math.max(storedTat ?? now, now);
  const next = Math.max(tat + points * interval, now);
  if (next - now > capacity + EPSILON_MS) {
    return {
      allowed: false,
      tat,
      consumed: bucket.burst + points,
      msBeforeNext: Math.ceil(next - now - capacity),
    };
  }
  const remaining = Math.floor((capacity - (next - now)) / interval + EPSILON_MS);
  return {
    allowed: true,
    tat: next,
    consumed: bucket.burst - remaining,
    msBeforeNext: Math.ceil(next - now),
  };
}

/** The same step in Lua, run atomically in Redis with Redis's clock so every replica agrees on "now". */
export const GCRA_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local points = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local interval = 1000 / tonumber(ARGV[3])
local capacity = burst * interval
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local nxt = tat + points * interval
if nxt < now then nxt = now end
if nxt - now > capacity + 0.001 then
  return {burst + points, math.ceil(nxt - now - capacity)}
end
if nxt > now then
  redis.call('SET', KEYS[1], string.format('%.3f', nxt), 'PX', math.ceil(nxt - now))
else
  redis.call('DEL', KEYS[1])
end
local remaining = math.floor((capacity - (nxt - now)) / interval + 0.001)
return {burst - remaining, math.ceil(nxt - now)}
`;

function toRes(bucket: Bucket, step: Pick<GcraStep, 'consumed' | 'msBeforeNext'>): RateLimiterRes {
  return new RateLimiterRes(
    Math.max(bucket.burst - step.consumed, 0),
    step.msBeforeNext,
    step.consumed,
    false,
  );
}

/**
 * The in-memory token bucket: the embedded mode's limiter and the Redis limiter's insurance. A
 * rate-limiter-flexible limiter (its in-memory one, with the algorithm replaced) so it can serve
 * as `insuranceLimiter`.
 */
export class MemoryTokenBucket extends RateLimiterMemory {
  private readonly tats = new Map<string, number>();
  private sweepAt = 0;

  constructor(
    private readonly bucket: Bucket,
    keyPrefix: string,
    private readonly now: () => number = Date.now,
  ) {
    super({ points: bucket.burst, duration: bucket.burst / bucket.rate, keyPrefix });
  }

  private step(key: string | number, points: number): GcraStep {
    const now = this.now();
    this.sweep(now);
    const rlKey = this.getKey(String(key));
    const step = gcraStep(this.tats.get(rlKey), now, points, this.bucket);
    if (step.allowed) {
      if (step.tat > now) this.tats.set(rlKey, step.tat);
      else this.tats.delete(rlKey);
    }
    return step;
  }

  // A full bucket needs no entry: drop them now and then so idle keys do not accumulate.
  private sweep(now: number) {
    if (now < this.sweepAt) return;
    this.sweepAt = now + 10_000;
    for (const [k, tat] of this.tats) if (tat <= now) this.tats.delete(k);
  }

  override consume(key: string | number, points = 1): Promise<RateLimiterRes> {
    const step = this.step(key, points);
    return step.allowed
      ? Promise.resolve(toRes(this.bucket, step))
      : Promise.reject(toRes(this.bucket, step));
  }

  override penalty(key: string | number, points = 1): Promise<RateLimiterRes> {
    return this.consume(key, points).catch((res: RateLimiterRes) => res);
  }

  override reward(key: string | number, points = 1): Promise<RateLimiterRes> {
    return Promise.resolve(toRes(this.bucket, this.step(key, -points)));
  }

  override get(key: string | number): Promise<RateLimiterRes | null> {
    return Promise.resolve(toRes(this.bucket, this.step(key, 0)));
  }

  override set(): Promise<RateLimiterRes> {
    return Promise.reject(new Error('MemoryTokenBucket.set is not supported'));
  }

  override block(): Promise<RateLimiterRes> {
    return Promise.reject(new Error('MemoryTokenBucket.block is not supported'));
  }

  override delete(key: string | number): Promise<boolean> {
    return Promise.resolve(this.tats.delete(this.getKey(String(key))));
  }
}
