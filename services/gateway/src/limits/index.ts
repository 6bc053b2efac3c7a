import type { Clock } from '@mandate/shared/core';
import type { Logger } from '@mandate/shared/observability';
import type { RedisTarget } from '@mandate/shared/data';
import { PlanLimiter, memoryBackend, type RequestLimiter } from './limiter';
import { resolveLimits, type PlanOverrides } from './plans';
import { RedisLimiterBackend } from './redis-backend';

export {
  PlanLimiter,
  memoryBackend,
  type LimitDecision,
  type LimitSubject,
  type LimiterBackend,
  type RequestLimiter,
} from './limiter';
export { DEFAULT_LIMITS, resolveLimits, type LimitsConfig, type PlanOverrides } from './plans';
export { RedisLimiterBackend } from './redis-backend';
export { clientIp, limitSubject } from './subject';

export interface LimiterSettings {
  redisUrl?: string | RedisTarget;
  prefix: string;
  overrides?: PlanOverrides;
  clock?: Clock;
  /** Failed authentications per client IP per minute before 429 (docs/API.md, "Hardening"). */
  authFailuresPerMinute?: number;
}

/** Redis-backed limits when a URL is given (shared by every replica), else in this process (embedded mode). */
export async function createLimiter(settings: LimiterSettings, logger: Logger): Promise<RequestLimiter> {
  const limits = resolveLimits(settings.overrides);
  if (!settings.redisUrl) {
    logger.warn('REDIS_URL not set: rate limits and quotas are counted in this process only');
    return new PlanLimiter(limits, memoryBackend(), {
      prefix: settings.prefix,
      clock: settings.clock,
      logger,
      authFailuresPerMinute: settings.authFailuresPerMinute,
    });
  }
  const backend = new RedisLimiterBackend(settings.redisUrl, logger);
  await backend.ready();
  return new PlanLimiter(limits, backend, {
    prefix: settings.prefix,
    clock: settings.clock,
    logger,
    authFailuresPerMinute: settings.authFailuresPerMinute,
  });
}
