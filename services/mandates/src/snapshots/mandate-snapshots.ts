import { DEFAULT_SNAPSHOT_PREFIX, snapshotKey } from '@mandate/shared';
import type { Mandate } from '../domain/mandate';

/**
 * Versioned copies of mandates that the verify service reads instead of asking this service
 * (README "Consistency"). Two rules make a stale decision impossible after a lifecycle call:
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

interface Entry {
  v: number;
  min: number;
  m?: string;
}

/** The same rules in process memory: tests, and an embedded stack that wants a snapshot cache. */
export class MemorySnapshots implements MandateSnapshots {
  readonly kind = 'memory' as const;
  private readonly entries = new Map<string, Entry>();
  /** Fails every call while set, like a Redis that is down. */
  failing = false;

  constructor(private readonly prefix = DEFAULT_SNAPSHOT_PREFIX) {}

  async fence(tenantId: string, mandateId: string, version: number): Promise<void> {
    if (this.failing) throw new Error('snapshot store down');
    const key = snapshotKey(this.prefix, tenantId, mandateId);
    const entry = this.entries.get(key) ?? { v: 0, min: 0 };
    entry.min = Math.max(entry.min, version);
    this.entries.set(key, entry);
  }

  async write(mandate: Mandate): Promise<boolean> {
    if (this.failing) throw new Error('snapshot store down');
    const key = snapshotKey(this.prefix, mandate.tenant_id, mandate.id);
    const entry = this.entries.get(key) ?? { v: 0, min: 0 };
    if (mandate.version <= entry.v || mandate.version < entry.min) return false;
    this.entries.set(key, { v: mandate.version, min: entry.min, m: JSON.stringify(mandate) });
    return true;
  }

  /** What a reader would get: the mandate when the snapshot is usable, else null (a miss). */
  read(tenantId: string, mandateId: string): Mandate | null {
    const entry = this.entries.get(snapshotKey(this.prefix, tenantId, mandateId));
    if (!entry?.m || entry.v < entry.min) return null;
    return JSON.parse(entry.m) as Mandate;
  }

  async ping(): Promise<void> {
    if (this.failing) throw new Error('snapshot store down');
  }
  async close(): Promise<void> {}
}
