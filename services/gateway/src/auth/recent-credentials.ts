import { createHash } from 'node:crypto';

/** How long a credential that authenticated still passes an address over its failed-authentication limit. */
export const RECENT_CREDENTIAL_MS = 10 * 60_000;
/** A success is written again at most once a minute: a busy key costs a Map lookup, not a write, per request. */
const REFRESH_MS = 60_000;

/**
 * The credentials that authenticated in this process in the last 10 minutes, by their SHA-256
 * (`digest`; never the value), each with the time of its last success. While a shared address (a NAT) is
 * over its failed-authentication limit, such a credential still reaches authentication, so one
 * client's stale key does not lock out the others; what decides is still authentication itself, so
 * a key revoked since (its cached resolution evicted by the revocation event) is refused, and then
 * forgotten here. Independent of KEY_CACHE_TTL_MS, which bounds how long a resolution is trusted.
 */
export class RecentCredentials {
  /** hash → last success (ms); Map order is insertion order, so the first entry is the oldest. */
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly maxEntries = 10_000,
  ) {}

  /** What a credential is known by here (SHA-256, base64url): computed once per request by the caller. */
  static digest(credential: string): string {
    return createHash('sha256').update(credential).digest('base64url');
  }

  remember(key: string): void {
    const now = this.now();
    const last = this.seen.get(key);
    if (last !== undefined && now - last < REFRESH_MS) return;
    this.seen.delete(key);
    if (this.seen.size >= this.maxEntries) this.seen.delete(this.seen.keys().next().value!);
    this.seen.set(key, now);
  }

  has(key: string): boolean {
    const last = this.seen.get(key);
    if (last === undefined) return false;
    if (this.now() - last < RECENT_CREDENTIAL_MS) return true;
    this.seen.delete(key);
    return false;
  }

  forget(key: string): void {
    this.seen.delete(key);
  }
}
