import { RateLimiterRes, type RateLimiterLike } from 'rate-limiter-flexible';
import { systemClock, type Clock } from '@mandate/shared/core';
import { processMetrics, type Logger } from '@mandate/shared/observability';
import {
  CLIENT_IP_BUCKETS,
  ENDPOINT_LIMITS,
  isClientIpBucket,
  PLANS,
  monthWindow,
  type Bucket,
  type ClientIpBucket,
  type EndpointLimit,
  type LimitName,
  type LimitsConfig,
  type Plan,
} from './plans';
import { MemoryQuota } from './memory-quota';
import { MemoryTokenBucket } from './token-bucket';
import { usageAnswer, type Usage } from './usage';

/** Where counters live: Redis (shared by replicas) or this process. */
export interface LimiterBackend {
  bucket(keyPrefix: string, bucket: Bucket): RateLimiterLike;
  /** A counter of `points` per key; each call passes `customDuration` (seconds) for the key's expiry. */
  quota(keyPrefix: string, points: number): RateLimiterLike;
  /**
   * Optional: takes one point from every part in ONE atomic store call, all or nothing — when any
   * part would reject, nothing is taken (so a 429 needs no refund). Rejects when the store cannot
   * answer; the limiter then runs the parts one by one on `insurance(limiter)`.
   */
  consumeAll?(parts: AtomicPart[], points?: number): Promise<RateLimiterRes[]>;
  /**
   * The quota counters under `keyPrefix` whose key starts with `start` and ends with `end`, by the
   * part between (GET /v1/usage: one tenant's callers in one month).
   */
  quotaCounters?(keyPrefix: string, start: string, end: string): Promise<Map<string, number>>;
  /** The per-process limiter that stands in for `limiter` while the store is unreachable. */
  insurance?(limiter: RateLimiterLike): RateLimiterLike;
  /**
   * True on a Redis Cluster: every key of one caller carries the caller as its hash tag, so the keys
   * one script call takes live in one slot (docs/DECISIONS.md, "Redis Cluster"). Elsewhere the key
   * names stay as they were.
   */
  readonly hashTags?: boolean;
  /** 'ok', or a value starting with 'degraded' that /readyz shows. */
  health(): string;
  close(): Promise<void>;
}

/**
 * How a caller's id appears in its keys: `{<id>}` when the backend needs hash tags, else as is.
 * `open` and `close` are what comes before and after the id, for reading the keys back.
 */
export function callerTag(hashTags: boolean | undefined) {
  const open = hashTags ? '{' : '';
  const close = hashTags ? '}' : '';
  return { open, close, of: (id: string) => `${open}${id}${close}` };
}

export function memoryBackend(now: () => number = Date.now): LimiterBackend {
  const quotas: MemoryQuota[] = [];
  return {
    bucket: (keyPrefix, bucket) => new MemoryTokenBucket(bucket, keyPrefix, now),
    quota: (keyPrefix, points) => {
      const quota = new MemoryQuota(points, keyPrefix, now);
      quotas.push(quota);
      return quota;
    },
    // One counter per plan shares a prefix: a caller's count is the sum over them.
    quotaCounters: async (keyPrefix, start, end) => {
      const sum = new Map<string, number>();
      for (const q of quotas) {
        if (q.keyPrefix !== keyPrefix) continue;
        for (const [id, n] of q.countsBetween(start, end)) sum.set(id, (sum.get(id) ?? 0) + n);
      }
      return sum;
    },
    health: () => 'ok',
    close: async () => undefined,
  };
}

/** Whom a request is counted against. */
export type LimitSubject =
  /** `id` is one API key or one JWT subject within a tenant. */
  | { kind: 'caller'; id: string; plan: Plan }
  /** A public route's request, counted against the client's address in that route's bucket. */
  | { kind: 'client_ip'; ip: string; bucket: ClientIpBucket };

export interface LimitDecision {
  allowed: boolean;
  /** RateLimit-Limit, -Remaining, -Reset; on a rejection also Retry-After. */
  headers: Record<string, string>;
  message?: 'Rate limit exceeded' | 'Monthly quota exceeded';
}

export interface RequestLimiter {
  /** `cost`: how many requests this one counts as (an AuthZEN batch: its items); default 1. */
  check(subject: LimitSubject, endpoint?: LimitName, cost?: number): Promise<LimitDecision>;
  /** Seconds a client IP must still wait after too many failed authentications; 0 when it may try. */
  authBlocked?(ip: string): number;
  /** Counts one failed authentication of a client IP; the seconds it must now wait, 0 while under the limit. */
  authFailed?(ip: string): Promise<number>;
  readiness(): Record<string, string>;
  /** This month's quota use of a tenant's callers, with its plan's limits (GET /v1/usage). */
  usage?(tenantId: string, plan: Plan): Promise<Usage>;
  close(): Promise<void>;
}

/** One limit of a request as the store sees it: its key (prefix + ':' + key, as rate-limiter-flexible names it) and numbers. */
export type AtomicPart =
  | { kind: 'rate'; rlKey: string; bucket: Bucket }
  | { kind: 'quota'; rlKey: string; points: number; seconds: number };

interface Applied {
  limiter: RateLimiterLike;
  key: string;
  /** A tally counts what passed and never rejects (the per-day use GET /v1/usage charts). */
  kind: 'rate' | 'quota' | 'tally';
  limit: number;
  part: AtomicPart;
  options?: { customDuration: number };
}

type Outcome = { ok: boolean; res: RateLimiterRes };

const seconds = (ms: number) => Math.max(0, Math.ceil(ms / 1000));

/** A tally's limit: a counter of this many points never rejects. */
const UNLIMITED = Number.MAX_SAFE_INTEGER;
/** How long a per-day counter lives: the whole month it belongs to, and a few days beyond. */
const DAY_COUNTER_SECONDS = 35 * 86_400;

/**
 * The plan's limits for one request, decided together: the global bucket, the endpoint's bucket
 * if the route has one, and the monthly quota; onboarding has its own per-IP bucket. All the
 * limiters that apply are consumed at once (one Redis round trip when auto-pipelined); if any
 * rejects, what the others took is given back, so a 429 costs the caller nothing.
 */
export class PlanLimiter implements RequestLimiter {
  private readonly global: Record<Plan, RateLimiterLike>;
  private readonly endpoints: Record<Plan, Record<EndpointLimit, RateLimiterLike>>;
  private readonly quotas: Record<Plan, RateLimiterLike>;
  /** Each caller's requests per UTC day (not a limit: counted with the quota, for GET /v1/usage). */
  private readonly daily: RateLimiterLike;
  private readonly perIp: Record<ClientIpBucket, RateLimiterLike>;
  private readonly perIpLimits: Record<ClientIpBucket, Bucket>;
  /** Failed authentications per client IP in a one-minute window (docs/API.md, "Hardening"), in the backend's store. */
  private readonly authFailures: RateLimiterLike;
  /** IPs this process saw go over that limit, and until when (ms); bounded, dropped once passed. */
  private readonly blockedUntil = new Map<string, number>();
  private readonly metrics = processMetrics();
  private readonly tag: ReturnType<typeof callerTag>;

  constructor(
    private readonly limits: LimitsConfig,
    private readonly backend: LimiterBackend,
    private readonly options: {
      prefix: string;
      clock?: Clock;
      logger?: Logger;
      /** Failed authentications a client IP may have per minute before 429 (default 20). */
      authFailuresPerMinute?: number;
    },
  ) {
    const p = options.prefix;
    this.tag = callerTag(backend.hashTags);
    const perPlan = <T>(f: (plan: Plan) => T) =>
      Object.fromEntries(PLANS.map((plan) => [plan, f(plan)])) as Record<Plan, T>;
    // Prefixes do not name the plan: a tenant that changes plan keeps its counters.
    this.global = perPlan((plan) => backend.bucket(`${p}:global`, limits.plans[plan].global));
    this.endpoints = perPlan(
      (plan) =>
        Object.fromEntries(
          ENDPOINT_LIMITS.map((l) => [l, backend.bucket(`${p}:ep:${l}`, limits.plans[plan].endpoints[l])]),
        ) as Record<EndpointLimit, RateLimiterLike>,
    );
    this.quotas = perPlan((plan) => backend.quota(`${p}:quota`, limits.plans[plan].monthlyQuota));
    this.daily = backend.quota(`${p}:day`, UNLIMITED);
    this.perIpLimits = { onboarding: limits.onboarding, public_reads: limits.publicReads };
    this.perIp = Object.fromEntries(
      CLIENT_IP_BUCKETS.map((b) => [b, backend.bucket(`${p}:${b}`, this.perIpLimits[b])]),
    ) as Record<ClientIpBucket, RateLimiterLike>;
    this.authFailures = backend.quota(`${p}:authfail`, options.authFailuresPerMinute ?? 20);
  }

  private nowMs(): number {
    return (this.options.clock ?? systemClock).now().getTime();
  }

  /**
   * Answered from this process's memory, so a request costs no extra store round trip: an IP is
   * blocked here once this replica has counted one of its failures over the shared limit.
   */
  authBlocked(ip: string): number {
    const until = this.blockedUntil.get(ip);
    if (until === undefined) return 0;
    const left = until - this.nowMs();
    if (left > 0) {
      this.metrics.rateLimitRejections.inc({ bucket: 'auth_failures' });
      return Math.max(1, seconds(left));
    }
    this.blockedUntil.delete(ip);
    return 0;
  }

  async authFailed(ip: string): Promise<number> {
    let res: RateLimiterRes;
    try {
      // A fixed one-minute window from the first failure; the store's counter is shared by replicas.
      res = await this.authFailures.consume(ip, 1, { customDuration: 60 });
      return 0;
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) {
        this.options.logger?.error({ err }, 'failed-authentication limiter failed; failure not counted');
        return 0;
      }
      res = err;
    }
    if (this.blockedUntil.size >= 10_000) this.blockedUntil.clear();
    this.blockedUntil.set(ip, this.nowMs() + res.msBeforeNext);
    this.metrics.rateLimitRejections.inc({ bucket: 'auth_failures' });
    return Math.max(1, seconds(res.msBeforeNext));
  }

  async check(subject: LimitSubject, endpoint?: LimitName, cost = 1): Promise<LimitDecision> {
    const now = (this.options.clock ?? systemClock).now();
    const { month, msToNextMonth } = monthWindow(now);
    const applied =
      subject.kind === 'client_ip'
        ? [this.clientIpLimit(subject)]
        : this.callerLimits(subject, endpoint, { now, month, msToNextMonth });

    const consumed = await this.consume(applied, cost);
    // Both Redis and the insurance limiter failed: serving unlimited beats refusing everyone.
    if (!consumed) return { allowed: true, headers: {} };
    const { outcomes, refundable } = consumed;

    const rejected = outcomes.findIndex((o, i) => !o.ok && applied[i]!.kind === 'quota');
    const rateRejected = rejected >= 0 ? -1 : this.longestWait(outcomes);
    const blocking = rejected >= 0 ? rejected : rateRejected;
    if (blocking >= 0) {
      if (refundable) this.refund(applied, outcomes, cost);
      return this.rejection({ subject, endpoint, applied, outcomes, blocking, msToNextMonth });
    }

    // Report the limit closest to biting (a tally is no limit).
    let i = 0;
    for (let j = 1; j < outcomes.length; j++)
      if (applied[j]!.kind !== 'tally' && outcomes[j]!.res.remainingPoints < outcomes[i]!.res.remainingPoints)
        i = j;
    const a = applied[i]!;
    const res = outcomes[i]!.res;
    return {
      allowed: true,
      headers: {
        'RateLimit-Limit': String(a.limit),
        'RateLimit-Remaining': String(res.remainingPoints),
        'RateLimit-Reset': String(a.kind === 'quota' ? seconds(msToNextMonth) : seconds(res.msBeforeNext)),
      },
    };
  }

  /** An anonymous request's one limit: its client IP's bucket. */
  private clientIpLimit(subject: Extract<LimitSubject, { kind: 'client_ip' }>): Applied {
    const bucket = this.perIpLimits[subject.bucket];
    return {
      limiter: this.perIp[subject.bucket],
      key: subject.ip,
      kind: 'rate',
      limit: bucket.burst,
      part: { kind: 'rate', rlKey: `${this.options.prefix}:${subject.bucket}:${subject.ip}`, bucket },
    };
  }

  /** A caller's limits, in this order: global, the endpoint's (if any), the monthly quota, the day's tally. */
  private callerLimits(
    subject: Exclude<LimitSubject, { kind: 'client_ip' }>,
    endpoint: LimitName | undefined,
    window: { now: Date; month: string; msToNextMonth: number },
  ): Applied[] {
    const applied: Applied[] = [];
    const plan = this.limits.plans[subject.plan];
    // Every key of the caller: one hash tag on a Redis Cluster, so one script call takes them all.
    const caller = this.tag.of(subject.id);
    applied.push({
      limiter: this.global[subject.plan],
      key: caller,
      kind: 'rate',
      limit: plan.global.burst,
      part: { kind: 'rate', rlKey: `${this.options.prefix}:global:${caller}`, bucket: plan.global },
    });
    if (endpoint && !isClientIpBucket(endpoint)) {
      applied.push({
        limiter: this.endpoints[subject.plan][endpoint],
        key: caller,
        kind: 'rate',
        limit: plan.endpoints[endpoint].burst,
        part: {
          kind: 'rate',
          rlKey: `${this.options.prefix}:ep:${endpoint}:${caller}`,
          bucket: plan.endpoints[endpoint],
        },
      });
    }
    applied.push(this.quotaLimit(subject.plan, caller, window));
    // The same request on the day's counter, in the same atomic call: it counts only what passed.
    const day = window.now.toISOString().slice(0, 10);
    applied.push({
      limiter: this.daily,
      key: `${caller}:${day}`,
      kind: 'tally',
      limit: UNLIMITED,
      part: {
        kind: 'quota',
        rlKey: `${this.options.prefix}:day:${caller}:${day}`,
        points: UNLIMITED,
        seconds: DAY_COUNTER_SECONDS,
      },
      options: { customDuration: DAY_COUNTER_SECONDS },
    });
    return applied;
  }

  /** The caller's monthly quota. */
  private quotaLimit(
    planName: Plan,
    caller: string,
    { month, msToNextMonth }: { month: string; msToNextMonth: number },
  ): Applied {
    const plan = this.limits.plans[planName];
    // The counter outlives its month by a day so replicas with skewed clocks still agree.
    const customDuration = seconds(msToNextMonth) + 86_400;
    return {
      limiter: this.quotas[planName],
      key: `${caller}:${month}`,
      kind: 'quota',
      limit: plan.monthlyQuota,
      part: {
        kind: 'quota',
        rlKey: `${this.options.prefix}:quota:${caller}:${month}`,
        points: plan.monthlyQuota,
        seconds: customDuration,
      },
      options: { customDuration },
    };
  }

  /**
   * Every limit consumed: in one atomic call when the backend has one (then nothing is refunded),
   * else on each limiter. Undefined when even the insurance limiters failed (logged).
   */
  private async consume(
    applied: Applied[],
    cost: number,
  ): Promise<{ outcomes: Outcome[]; refundable: boolean } | undefined> {
    let outcomes: Outcome[];
    // Whether what the passing limits took must be given back on a rejection (not after an atomic all-or-nothing call).
    let refundable = true;
    const { backend } = this;
    try {
      if (backend.consumeAll) {
        // One script call for every limit of the request (global, endpoint, quota).
        try {
          const results = await backend.consumeAll(
            applied.map((a) => a.part),
            cost,
          );
          outcomes = results.map((res, i) => ({ ok: res.consumedPoints <= applied[i]!.limit, res }));
          refundable = false;
        } catch {
          // The store did not answer: the per-process limiters decide, as each store limiter's insurance would.
          this.metrics.rateLimitRedisFallbacks.inc();
          outcomes = await this.consumeEach(applied, (l) => backend.insurance?.(l) ?? l, cost);
        }
      } else outcomes = await this.consumeEach(applied, (l) => l, cost);
    } catch (err) {
      // Both Redis and the insurance limiter failed: serving unlimited beats refusing everyone.
      this.options.logger?.error({ err }, 'rate limiter failed; request not limited');
      return undefined;
    }

    return { outcomes, refundable };
  }

  /** The 429 answer for the limit at `blocking`, counted in the rejection metric by its bucket. */
  private rejection(r: {
    subject: LimitSubject;
    endpoint: LimitName | undefined;
    applied: Applied[];
    outcomes: Outcome[];
    blocking: number;
    msToNextMonth: number;
  }): LimitDecision {
    const { subject, endpoint, applied, outcomes, blocking, msToNextMonth } = r;
    const a = applied[blocking]!;
    const quota = a.kind === 'quota';
    // applied is [a per-IP bucket] or [global, endpoint?, quota]: the blocking index names the bucket.
    this.metrics.rateLimitRejections.inc({
      bucket: quota
        ? 'quota'
        : subject.kind === 'client_ip'
          ? subject.bucket
          : blocking === 0
            ? 'global'
            : `endpoint:${endpoint}`,
    });
    const retryAfter = quota
      ? seconds(msToNextMonth)
      : Math.max(1, seconds(outcomes[blocking]!.res.msBeforeNext));
    return {
      allowed: false,
      message: quota ? 'Monthly quota exceeded' : 'Rate limit exceeded',
      headers: {
        'RateLimit-Limit': String(a.limit),
        'RateLimit-Remaining': '0',
        'RateLimit-Reset': String(retryAfter),
        'Retry-After': String(retryAfter),
      },
    };
  }

  /** Every limit consumed on its own limiter, concurrently (one auto-pipelined round trip on Redis). */
  private consumeEach(
    applied: Applied[],
    on: (limiter: RateLimiterLike) => RateLimiterLike,
    cost: number,
  ): Promise<Outcome[]> {
    return Promise.all(
      applied.map((a) =>
        on(a.limiter)
          .consume(a.key, cost, a.options)
          .then(
            (res): Outcome => ({ ok: true, res }),
            (err: unknown): Outcome => {
              if (err instanceof RateLimiterRes) return { ok: false, res: err };
              throw err;
            },
          ),
      ),
    );
  }

  private longestWait(outcomes: Outcome[]): number {
    let found = -1;
    outcomes.forEach((o, i) => {
      if (!o.ok && (found < 0 || o.res.msBeforeNext > outcomes[found]!.res.msBeforeNext)) found = i;
    });
    return found;
  }

  /**
   * Gives back what a rejected request took: the buckets that let it through, the quota (a
   * counter keeps counting past its limit) and the day's tally. Fire-and-forget, off the request's path.
   */
  private refund(applied: Applied[], outcomes: Outcome[], cost: number) {
    applied.forEach((a, i) => {
      if (outcomes[i]!.ok || a.kind === 'quota') {
        (this.backend.insurance?.(a.limiter) ?? a.limiter)
          .reward(a.key, cost, a.options)
          .catch((err: unknown) => this.options.logger?.warn({ err }, 'rate limit refund failed'));
      }
    });
  }

  readiness(): Record<string, string> {
    return { rate_limiter: this.backend.health() };
  }

  async usage(tenantId: string, plan: Plan): Promise<Usage> {
    const now = (this.options.clock ?? systemClock).now();
    const { month } = monthWindow(now);
    const read = this.backend.quotaCounters?.bind(this.backend);
    const { open, close } = this.tag;
    const [counters, days] = await Promise.all([
      read?.(`${this.options.prefix}:quota`, `${open}${tenantId}:`, `${close}:${month}`),
      // Every per-day counter of the tenant (`<caller>:<YYYY-MM-DD>`, ~35 days of them); this month's are summed.
      read?.(`${this.options.prefix}:day`, `${open}${tenantId}:`, ''),
    ]);
    const perDay = new Map<string, number>();
    for (const [callerAndDay, used] of days ?? []) {
      const day = callerAndDay.slice(callerAndDay.lastIndexOf(':') + 1);
      if (day.startsWith(`${month}-`)) perDay.set(day, (perDay.get(day) ?? 0) + used);
    }
    return usageAnswer(tenantId, plan, this.limits, counters ?? new Map<string, number>(), now, perDay);
  }

  close(): Promise<void> {
    return this.backend.close();
  }
}
