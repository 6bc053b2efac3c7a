import { z } from 'zod';
import {
  ENDPOINT_LIMITS,
  PLANS,
  monthWindow,
  type EndpointLimit,
  type LimitsConfig,
  type Plan,
} from './plans';

const bucketSchema = z.object({ rate: z.number(), burst: z.number() });

/** GET /v1/usage: the caller's plan, its limits and this month's quota use per API key / JWT subject. */
export const usageSchema = z.object({
  tenant_id: z.string(),
  plan: z.enum(PLANS),
  limits: z.object({
    monthly_quota: z.number().describe('Requests per API key (or JWT subject) per calendar month, UTC'),
    global: bucketSchema.describe('Requests per second (rate) and at once (burst), per key'),
    endpoints: z.object(
      Object.fromEntries(ENDPOINT_LIMITS.map((l) => [l, bucketSchema])) as Record<
        EndpointLimit,
        typeof bucketSchema
      >,
    ),
  }),
  period: z.object({
    month: z.string().describe('YYYY-MM, UTC'),
    start: z.string().describe('The first instant of the month, UTC'),
    reset_at: z.string().describe('When every counter starts again: the first instant of the next month'),
    days_to_reset: z.number().int().describe('Whole days until reset_at, rounded up'),
  }),
  usage: z
    .array(
      z.object({
        key_id: z.string().optional(),
        subject_id: z.string().optional(),
        used: z.number().int(),
        remaining: z.number().int(),
      }),
    )
    .describe(
      'Callers of the tenant with requests counted this month, most used first; an unused key is absent',
    ),
  daily: z
    .array(
      z.object({
        date: z.string().describe('YYYY-MM-DD, UTC'),
        used: z.number().int().describe('Requests of every caller of the tenant counted that day'),
      }),
    )
    .describe('Every day of this month from the 1st to today (UTC), oldest first; a day without use is 0'),
});
export type Usage = z.infer<typeof usageSchema>;

/** The answer from the counters (`id` as the limiter names a caller within its tenant: a key id or a subject). */
export function usageAnswer(
  tenantId: string,
  plan: Plan,
  limits: LimitsConfig,
  counters: ReadonlyMap<string, number>,
  now: Date,
  /** The tenant's use per day of this month (YYYY-MM-DD → requests); a day absent is 0. */
  perDay: ReadonlyMap<string, number> = new Map(),
): Usage {
  const p = limits.plans[plan];
  const { month, msToNextMonth } = monthWindow(now);
  const reset = new Date(now.getTime() + msToNextMonth);
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  return {
    tenant_id: tenantId,
    plan,
    limits: { monthly_quota: p.monthlyQuota, global: p.global, endpoints: p.endpoints },
    period: {
      month,
      start: start.toISOString(),
      reset_at: reset.toISOString(),
      days_to_reset: Math.ceil(msToNextMonth / 86_400_000),
    },
    usage: [...counters]
      .filter(([, used]) => used > 0)
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .map(([id, used]) => ({
        ...(id.startsWith('key_') ? { key_id: id } : { subject_id: id }),
        used,
        remaining: Math.max(0, p.monthlyQuota - used),
      })),
    daily: Array.from({ length: now.getUTCDate() }, (_, i) => {
      const date = new Date(start.getTime() + i * 86_400_000).toISOString().slice(0, 10);
      return { date, used: perDay.get(date) ?? 0 };
    }),
  };
}
