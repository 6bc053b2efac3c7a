import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';

/**
 * A per-process counter of `points` per key for the monthly quota (embedded mode, and the Redis
 * quota's insurance). RateLimiterMemory itself cannot hold a month: it expires keys with a
 * setTimeout, and Node caps those at ~24.8 days (longer ones fire after 1 ms, resetting the count).
 * Expiry here is checked on use instead, with an occasional sweep.
 */
export class MemoryQuota extends RateLimiterMemory {
  private readonly counts = new Map<string, { count: number; expiresAt: number }>();
  private sweepAt = 0;

  constructor(
    points: number,
    keyPrefix: string,
    private readonly now: () => number = Date.now,
  ) {
    super({ points, duration: 0, keyPrefix });
  }

  private add(key: string | number, points: number, options?: { customDuration?: number }): RateLimiterRes {
    const now = this.now();
    if (now >= this.sweepAt) {
      this.sweepAt = now + 60_000;
      for (const [k, v] of this.counts) if (v.expiresAt <= now) this.counts.delete(k);
    }
    const rlKey = this.getKey(String(key));
    let entry = this.counts.get(rlKey);
    if (!entry || entry.expiresAt <= now) {
      entry = { count: 0, expiresAt: now + (options?.customDuration ?? 31 * 86_400) * 1000 };
      this.counts.set(rlKey, entry);
    }
    entry.count = Math.max(0, entry.count + points);
    return new RateLimiterRes(
      Math.max(this.points - entry.count, 0),
      entry.expiresAt - now,
      entry.count,
      entry.count === points,
    );
  }

  override consume(
    key: string | number,
    points = 1,
    options: { customDuration?: number } = {},
  ): Promise<RateLimiterRes> {
    const res = this.add(key, points, options);
    return res.consumedPoints > this.points ? Promise.reject(res) : Promise.resolve(res);
  }

  override penalty(
    key: string | number,
    points = 1,
    options: { customDuration?: number } = {},
  ): Promise<RateLimiterRes> {
    return Promise.resolve(this.add(key, points, options));
  }

  override reward(
    key: string | number,
    points = 1,
    options: { customDuration?: number } = {},
  ): Promise<RateLimiterRes> {
    return Promise.resolve(this.add(key, -points, options));
  }

  override get(key: string | number): Promise<RateLimiterRes | null> {
    const entry = this.counts.get(this.getKey(String(key)));
    if (!entry || entry.expiresAt <= this.now()) return Promise.resolve(null);
    return Promise.resolve(
      new RateLimiterRes(
        Math.max(this.points - entry.count, 0),
        entry.expiresAt - this.now(),
        entry.count,
        false,
      ),
    );
  }

  /** The live counters whose key (without the prefix) starts and ends as given, by the part between. */
  countsBetween(start: string, end: string): Map<string, number> {
    const now = this.now();
    const head = this.getKey(start);
    const found = new Map<string, number>();
    for (const [rlKey, v] of this.counts) {
      if (v.expiresAt <= now || !rlKey.startsWith(head) || !rlKey.endsWith(end)) continue;
      if (rlKey.length < head.length + end.length) continue;
      found.set(rlKey.slice(head.length, rlKey.length - end.length), v.count);
    }
    return found;
  }

  override delete(key: string | number): Promise<boolean> {
    return Promise.resolve(this.counts.delete(this.getKey(String(key))));
  }
}
