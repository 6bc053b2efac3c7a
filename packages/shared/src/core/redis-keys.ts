/**
 * One namespace for every key any service writes to Redis: `REDIS_PREFIX` (commonConfigShape),
 * the Redis counterpart of AMQP_NAMESPACE. Two deployments (or test runs) sharing a Redis server
 * never touch each other's keys, and `SCAN MATCH <prefix>*` finds everything one of them wrote
 * (docs/OPERATIONS.md). Each purpose has its own key space under it, derived here only.
 */
export const DEFAULT_REDIS_PREFIX = 'mandate:';

export function redisKeySpaces(prefix: string) {
  return {
    /** The gateway's rate limits, quotas, per-day usage and failed-authentication counters (`<this>:<kind>:…`). */
    rateLimits: `${prefix}rl`,
    /** The gateway's Idempotency-Key records (`<this>:<scope>:<key>`). */
    idempotency: `${prefix}idem`,
    /** The mandate snapshots mandates writes and verify reads (`snapshotKey(<this>, tenant, mandate)`). */
    snapshots: `${prefix}snapshot:`,
  };
}
