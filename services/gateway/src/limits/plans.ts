import { z } from 'zod';
import type { Plan } from '@mandate/identity';
import type { LimitBucket } from '@mandate/shared/contract';

/** "Burst B, rate R": a fresh client may send `burst` requests at once; sustained, `rate` per second pass. */
export interface Bucket {
  rate: number;
  burst: number;
}

// The plans are identity's (a tenant's plan is its record's); the limits of each are the gateway's.
export { PLANS, type Plan } from '@mandate/identity';
export type LimitName = LimitBucket;
/** The buckets counted per client IP (public routes), not per caller. */
export const CLIENT_IP_BUCKETS = ['onboarding', 'public_reads'] as const satisfies readonly LimitBucket[];
export type ClientIpBucket = (typeof CLIENT_IP_BUCKETS)[number];
export const isClientIpBucket = (bucket: LimitBucket | undefined): bucket is ClientIpBucket =>
  (CLIENT_IP_BUCKETS as readonly (LimitBucket | undefined)[]).includes(bucket);
/** The per-endpoint buckets that follow the caller's plan (the public routes' are per client IP, plan-less). */
export type EndpointLimit = Exclude<LimitName, ClientIpBucket>;
export const ENDPOINT_LIMITS: readonly EndpointLimit[] = [
  'mandates.create',
  'mandates.lifecycle',
  'apikeys.create',
  'evidence.export',
];

export interface PlanLimits {
  global: Bucket;
  /** Requests per API key (or JWT subject) per calendar month, UTC. */
  monthlyQuota: number;
  endpoints: Record<EndpointLimit, Bucket>;
}

export interface LimitsConfig {
  plans: Record<Plan, PlanLimits>;
  /** Per client IP: sign-up requests and the wallet's sign-in steps. */
  onboarding: Bucket;
  /**
   * Per client IP: the JWKS and the status lists (docs/DECISIONS.md, "Status lists (v3)"). Sized for a relying party's fleet
   * behind one address refreshing its lists every `ttl` (60 s by default), not for a scraper.
   */
  publicReads: Bucket;
}

/** docs/API.md, "Rate limits and quotas". */
export const DEFAULT_LIMITS: LimitsConfig = {
  plans: {
    beta: {
      global: { rate: 50, burst: 100 },
      monthlyQuota: 50_000,
      endpoints: {
        'mandates.create': { rate: 5, burst: 10 },
        'mandates.lifecycle': { rate: 10, burst: 20 },
        'apikeys.create': { rate: 1, burst: 3 },
        'evidence.export': { rate: 1, burst: 5 },
      },
    },
    enterprise: {
      global: { rate: 200, burst: 400 },
      monthlyQuota: 500_000,
      endpoints: {
        'mandates.create': { rate: 25, burst: 50 },
        'mandates.lifecycle': { rate: 30, burst: 60 },
        'apikeys.create': { rate: 3, burst: 9 },
        'evidence.export': { rate: 5, burst: 20 },
      },
    },
  },
  onboarding: { rate: 2, burst: 5 },
  publicReads: { rate: 50, burst: 200 },
};

const bucketSchema = z.strictObject({ rate: z.number().positive(), burst: z.number().int().min(1) });
const planOverrideSchema = z.strictObject({
  global: bucketSchema.optional(),
  monthly_quota: z.number().int().min(0).optional(),
  endpoints: z
    .strictObject(
      Object.fromEntries(ENDPOINT_LIMITS.map((l) => [l, bucketSchema.optional()])) as Record<
        EndpointLimit,
        z.ZodOptional<typeof bucketSchema>
      >,
    )
    .optional(),
});

/**
 * `PLAN_OVERRIDES`: JSON that replaces some of the documented plan numbers, e.g. a small quota for a test or
 * a staging deployment: `{"beta": {"monthly_quota": 5, "global": {"rate": 5, "burst": 10}}, "onboarding": {...}}`.
 */
export const planOverridesSchema = z.strictObject({
  beta: planOverrideSchema.optional(),
  enterprise: planOverrideSchema.optional(),
  onboarding: bucketSchema.optional(),
  public_reads: bucketSchema.optional(),
});
export type PlanOverrides = z.infer<typeof planOverridesSchema>;

export function resolveLimits(
  overrides: PlanOverrides = {},
  base: LimitsConfig = DEFAULT_LIMITS,
): LimitsConfig {
  const plan = (name: Plan): PlanLimits => {
    const o = overrides[name] ?? {};
    const b = base.plans[name];
    return {
      global: o.global ?? b.global,
      monthlyQuota: o.monthly_quota ?? b.monthlyQuota,
      endpoints: {
        'mandates.create': o.endpoints?.['mandates.create'] ?? b.endpoints['mandates.create'],
        'mandates.lifecycle': o.endpoints?.['mandates.lifecycle'] ?? b.endpoints['mandates.lifecycle'],
        'apikeys.create': o.endpoints?.['apikeys.create'] ?? b.endpoints['apikeys.create'],
        'evidence.export': o.endpoints?.['evidence.export'] ?? b.endpoints['evidence.export'],
      },
    };
  };
  return {
    plans: { beta: plan('beta'), enterprise: plan('enterprise') },
    onboarding: overrides.onboarding ?? base.onboarding,
    publicReads: overrides.public_reads ?? base.publicReads,
  };
}

/** The calendar month (UTC) an instant falls in, and how long until the next one starts. */
export function monthWindow(now: Date): { month: string; msToNextMonth: number } {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  const next = Date.UTC(y, m + 1, 1);
  return { month: `${y}-${String(m + 1).padStart(2, '0')}`, msToNextMonth: next - now.getTime() };
}
