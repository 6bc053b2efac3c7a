import { DEFAULT_SNAPSHOT_PREFIX, snapshotKey } from '@mandate/shared/mandate';
import type { Mandate } from '../src/domain/mandate';
import type { MandateSnapshots } from '../src/snapshots/mandate-snapshots';

interface Entry {
  v: number;
  min: number;
  m?: string;
}

/**
 * The snapshot rules (write only forward, fence) in process memory, for tests that look at what a
 * reader would get. Nothing in production uses it: without Redis there are no snapshots (NoSnapshots).
 */
export class MemorySnapshots implements MandateSnapshots {
  readonly kind = 'memory' as const;
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly prefix = DEFAULT_SNAPSHOT_PREFIX) {}

  async fence(tenantId: string, mandateId: string, version: number): Promise<void> {
    const key = snapshotKey(this.prefix, tenantId, mandateId);
    const entry = this.entries.get(key) ?? { v: 0, min: 0 };
    entry.min = Math.max(entry.min, version);
    this.entries.set(key, entry);
  }

  async write(mandate: Mandate): Promise<boolean> {
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

  async ping(): Promise<void> {}
  async close(): Promise<void> {}
}
