import { SortedById, takeMatching } from '@mandate/shared/core';
import { type AuditEvent, type MemoryOutbox } from '@mandate/shared/events';
import { DuplicateRecord } from '../common/errors';
import type { ListOptions } from '../common/store';
import type { Tenant } from './tenant';
import type { TenantStore } from './tenant-store';

export class MemoryTenantStore implements TenantStore {
  private readonly tenants = new Map<string, Tenant>();
  /** The ids sorted, for list. */
  private readonly ids = SortedById.ofIds();

  constructor(private readonly outbox: MemoryOutbox) {}

  async insert(tenant: Tenant, outbox?: AuditEvent[]): Promise<void> {
    if (this.tenants.has(tenant.id)) throw new DuplicateRecord('Tenant');
    this.tenants.set(tenant.id, structuredClone(tenant));
    this.ids.insert(tenant.id);
    this.outbox.add(`tenant:${tenant.id}`, outbox);
  }

  async get(tenantId: string): Promise<Tenant | null> {
    const t = this.tenants.get(tenantId);
    return t ? structuredClone(t) : null;
  }

  async list({ limit, before }: ListOptions): Promise<Tenant[]> {
    return takeMatching(this.ids.newestFirst(before), () => true, limit).map((id) =>
      structuredClone(this.tenants.get(id)!),
    );
  }
}
