import type { Logger } from '@mandate/shared/observability';
import type { RedisTarget } from '@mandate/shared/data';
import { Idempotency, type IdempotencySettings } from './idempotency';
import { MemoryIdempotencyStore } from './memory-store';
import { RedisIdempotencyStore } from './redis-store';

export {
  Idempotency,
  DEFAULT_IDEMPOTENCY_SETTINGS,
  IDEMPOTENCY_HEADER,
  REPLAYED_HEADER,
  KEY_IN_PROGRESS,
  KEY_REUSED,
  INVALID_KEY,
  type IdempotencySettings,
  type IdempotentCall,
} from './idempotency';
export { MemoryIdempotencyStore } from './memory-store';
export { RedisIdempotencyStore } from './redis-store';
export type { IdempotencyRecord, IdempotencyStore, PendingLock, StoredResponse } from './store';

/** Redis when a URL is given (shared by every replica), else in this process (embedded mode). */
export async function createIdempotency(
  options: { redisUrl?: string | RedisTarget; prefix: string } & Partial<IdempotencySettings>,
  logger: Logger,
): Promise<Idempotency> {
  const { redisUrl, prefix, ...settings } = options;
  if (!redisUrl) {
    logger.warn('REDIS_URL not set: Idempotency-Key records are kept in this process only');
    return new Idempotency(new MemoryIdempotencyStore(), logger, settings);
  }
  const store = new RedisIdempotencyStore(redisUrl, prefix, logger);
  await store.ready();
  return new Idempotency(store, logger, settings);
}
