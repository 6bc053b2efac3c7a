import type { AuditEvent, MemoryOutbox } from '@mandate/shared/events';
import { PerTenantDocument } from '../common/memory';
import type { AccessBaseline } from './access-baseline';
import type { AccessBaselineStore } from './access-baseline-store';

export class MemoryAccessBaselineStore implements AccessBaselineStore {
  /** One per tenant, as the Mongo unique index keeps it. */
  private readonly baselines = new PerTenantDocument<AccessBaseline>();

  constructor(private readonly outbox: MemoryOutbox) {}

  async get(tenantId: string): Promise<AccessBaseline | null> {
    return this.baselines.get(tenantId);
  }

  async put(baseline: AccessBaseline, outbox?: AuditEvent[]): Promise<boolean> {
    const stored = this.baselines.get(baseline.tenant_id);
    // The same guard as the Mongo filter: never replace a baseline saved later.
    if (stored && Date.parse(stored.saved_at) > Date.parse(baseline.saved_at)) return false;
    this.baselines.set(baseline.tenant_id, baseline);
    this.outbox.add(`access_baseline:${baseline.tenant_id}`, outbox);
    return true;
  }
}
