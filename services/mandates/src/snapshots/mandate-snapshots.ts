import type { Mandate } from '../domain/mandate';

/**
 * Versioned copies of mandates that the verify service reads instead of asking this service
 * (docs/DEPLOYMENT.md, "Consistency and expiry"). Two rules make a stale decision impossible after a lifecycle call:
 *
 * - `write` only ever moves a snapshot forward: a slow writer never replaces a newer version.
 * - `fence` raises the lowest version readers may trust *before* a change is committed; a
 *   snapshot below the fence reads as a miss, so verify asks this service (the store) instead.
 *
 * The wire format is shared with verify's reader: `snapshotKey` and its fields, in
 * @mandate/shared (mandate-snapshot.ts).
 */
export interface MandateSnapshots {
  readonly kind: 'redis' | 'memory' | 'none';
  /** Readers must not use any snapshot of this mandate below `version` from now on. Throws when it cannot say so. */
  fence(tenantId: string, mandateId: string, version: number): Promise<void>;
  /** Stores the snapshot unless one at the same or a newer version, or a higher fence, is there. True when written. */
  write(mandate: Mandate): Promise<boolean>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Long enough that no read in flight (bounded by verify's 2 s read timeout) can outlive a newer snapshot. */
export const DEFAULT_SNAPSHOT_TTL_SECONDS = 86_400;

/** Without Redis (embedded mode) there are no snapshots: verify reads every mandate from this service. */
export class NoSnapshots implements MandateSnapshots {
  readonly kind = 'none' as const;
  async fence(): Promise<void> {}
  async write(): Promise<boolean> {
    return false;
  }
  async ping(): Promise<void> {}
  async close(): Promise<void> {}
}
