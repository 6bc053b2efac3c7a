/**
 * How many credentials unknown to this gateway a blocked address may have looked up in a minute
 * (docs/DECISIONS.md, "Authentication"): enough for the clients behind a shared address to
 * bring fresh keys, too few to guess with.
 */
export const BLOCKED_LOOKUPS = 10;
const WINDOW_MS = 60_000;

interface AddressLookups {
  /** When this address's minute of lookups ends (ms). */
  until: number;
  /** Lookups of this minute that did not authenticate, or are still under way. */
  spent: number;
  /** Credentials (their identity digest) that failed from this address this minute. */
  failing: Set<string>;
}

/**
 * The lookups a blocked address still gets. A valid credential must pass a blocked address, and a
 * credential the gateway does not know yet can only be told valid by looking it up; so a blocked
 * address may have BLOCKED_LOOKUPS credentials that fail looked up per minute (a lookup that
 * authenticates is given back), and one that failed is refused without another lookup until the
 * minute ends, so a stale key retried in a loop spends one lookup, not all.
 */
export class BlockedLookups {
  private readonly addresses = new Map<string, AddressLookups>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly maxAddresses = 10_000,
  ) {}

  private of(ip: string): AddressLookups {
    const now = this.now();
    let entry = this.addresses.get(ip);
    if (entry === undefined || entry.until <= now) {
      if (entry === undefined && this.addresses.size >= this.maxAddresses) this.addresses.clear();
      entry = { until: now + WINDOW_MS, spent: 0, failing: new Set() };
      this.addresses.set(ip, entry);
    }
    return entry;
  }

  /** Takes one lookup for this credential; false when it failed already or none is left. */
  take(ip: string, identity: string): boolean {
    const entry = this.of(ip);
    if (entry.failing.has(identity) || entry.spent >= BLOCKED_LOOKUPS) return false;
    entry.spent++;
    return true;
  }

  /** A taken lookup that did not end in a failed authentication: it costs nothing. */
  giveBack(ip: string): void {
    const entry = this.addresses.get(ip);
    if (entry !== undefined && entry.spent > 0) entry.spent--;
  }

  /** A credential failed from a blocked address: refused without a lookup for the rest of the minute. */
  failed(ip: string, identity: string): void {
    this.of(ip).failing.add(identity);
  }
}
