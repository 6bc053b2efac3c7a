import { DEFAULT_REDIS_PREFIX, redisKeySpaces } from '../core/redis-keys';

/**
 * The snapshot contract between the mandates service (the writer) and verify (the reader),
 * docs/DEPLOYMENT.md, "Consistency and expiry": a Redis hash at `snapshotKey(prefix, tenantId, mandateId)` with fields
 * `v` (the snapshot's version), `m` (the mandate as JSON), `s` (its MAC, see snapshotMac) and
 * `min` (the fence). A reader may use `m` only when `v >= min` and `s` checks. Both services must
 * agree on it byte for byte, so it is written once, here.
 */
export const DEFAULT_SNAPSHOT_PREFIX = redisKeySpaces(DEFAULT_REDIS_PREFIX).snapshots;

export function snapshotKey(prefix: string, tenantId: string, mandateId: string): string {
  return `${prefix}${tenantId}:${mandateId}`;
}

/** Stored states that time can turn into EXPIRED; REVOKED stays REVOKED whatever expires_at says. */
export const EXPIRABLE_STATES = ['ACTIVE', 'SUSPENDED'] as const;

export function isPastExpiry(m: { expires_at?: string | null }, now: Date): boolean {
  return m.expires_at != null && Date.parse(m.expires_at) <= now.getTime();
}

/**
 * The state a reader sees: expiry takes effect the moment expires_at passes, before the expiry
 * sweeper has persisted it. A business rule, but one of the contract: a snapshot carries the
 * stored state, and if verify read it differently from the mandates service, verify would ALLOW
 * a mandate the mandates API already answers as EXPIRED.
 */
export function effectiveState<S extends string>(
  m: { state: S; expires_at?: string | null },
  now: Date,
): S | 'EXPIRED' {
  return (EXPIRABLE_STATES as readonly string[]).includes(m.state) && isPastExpiry(m, now)
    ? 'EXPIRED'
    : m.state;
}
