/**
 * Where Idempotency-Key records live (docs/API.md, "Idempotency"). One record per scope (caller) and key: first a
 * pending lock, then the stored response. Adapters only store; the rules are in idempotency.ts.
 */

/** The response a key's first request got, replayed to every retry with the same request. */
export interface StoredResponse {
  status: number;
  /** The few headers worth replaying (content-type, location, cache-control). */
  headers: Record<string, string>;
  /** base64 of the body bytes. */
  body: string;
}

export type IdempotencyRecord =
  /** The first request holds the lock and has not answered yet; `token` identifies that holder. */
  | { state: 'pending'; fingerprint: string; token: string }
  | { state: 'done'; fingerprint: string; response: StoredResponse };

/** What the first request writes: its request's fingerprint and a random token naming it as the holder. */
export interface PendingLock {
  fingerprint: string;
  token: string;
}

export interface IdempotencyStore {
  readonly kind: 'redis' | 'memory';
  /**
   * Takes the key for this request if nobody has it (returns null: go ahead), atomically;
   * otherwise returns what is there. The lock lapses after `leaseMs` unless renewed, completed or
   * released.
   */
  acquire(
    scope: string,
    key: string,
    pending: PendingLock,
    leaseMs: number,
  ): Promise<IdempotencyRecord | null>;
  /** Extends the holder's lock to `leaseMs` from now; a lapsed or foreign lock is left alone. */
  renew(scope: string, key: string, pending: PendingLock, leaseMs: number): Promise<void>;
  /** Replaces the holder's pending lock with the response, kept `ttlMs`; a lapsed or foreign lock is left alone. */
  complete(
    scope: string,
    key: string,
    pending: PendingLock,
    response: StoredResponse,
    ttlMs: number,
  ): Promise<void>;
  /** Drops the holder's lock without storing anything, so a retry executes again. */
  release(scope: string, key: string, pending: PendingLock): Promise<void>;
  close(): Promise<void>;
}
