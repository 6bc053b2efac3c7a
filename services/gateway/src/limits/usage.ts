import type { z } from 'zod';
import type { usageSchema } from '../contract';
import { monthWindow, type LimitsConfig, type Plan } from './plans';

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
