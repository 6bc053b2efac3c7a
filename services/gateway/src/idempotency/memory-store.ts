import type { IdempotencyRecord, IdempotencyStore, PendingLock, StoredResponse } from './store';

interface Entry {
  record: IdempotencyRecord;
  expiresAt: number;
}

/** Embedded mode: records in this process (one gateway, so "per replica" is the whole product). */
export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly kind = 'memory' as const;
  private readonly entries = new Map<string, Entry>();
  private writes = 0;

  constructor(private readonly now: () => number = Date.now) {}

  private live(id: string): Entry | undefined {
    const entry = this.entries.get(id);
    if (entry && entry.expiresAt <= this.now()) {
      this.entries.delete(id);
      return undefined;
    }
    return entry;
  }

  // Expired records are dropped on access, and all of them every so many writes, so memory stays bounded by the TTL.
  private sweep() {
    if (++this.writes % 1000 !== 0) return;
    const now = this.now();
    for (const [id, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(id);
  }

  async acquire(scope: string, key: string, pending: PendingLock, leaseMs: number) {
    const id = `${scope}\n${key}`;
    const entry = this.live(id);
    if (entry) return entry.record;
    this.sweep();
    this.entries.set(id, { record: { state: 'pending', ...pending }, expiresAt: this.now() + leaseMs });
    return null;
  }

  async renew(scope: string, key: string, pending: PendingLock, leaseMs: number) {
    const entry = this.held(`${scope}\n${key}`, pending);
    if (entry) entry.expiresAt = this.now() + leaseMs;
  }

  async complete(scope: string, key: string, pending: PendingLock, response: StoredResponse, ttlMs: number) {
    const id = `${scope}\n${key}`;
    if (!this.holds(id, pending)) return;
    this.entries.set(id, {
      record: { state: 'done', fingerprint: pending.fingerprint, response },
      expiresAt: this.now() + ttlMs,
    });
  }

  async release(scope: string, key: string, pending: PendingLock) {
    const id = `${scope}\n${key}`;
    if (this.holds(id, pending)) this.entries.delete(id);
  }

  private holds(id: string, pending: PendingLock): boolean {
    return this.held(id, pending) !== undefined;
  }

  /** The entry of the holder's pending lock, if it still holds it. */
  private held(id: string, pending: PendingLock): Entry | undefined {
    const entry = this.live(id);
    return entry?.record.state === 'pending' && entry.record.token === pending.token ? entry : undefined;
  }

  async close() {
    this.entries.clear();
  }
}
