import type { AuditEvent, MemoryOutbox } from '@mandate/shared';
import { DuplicateRecord } from '../common/errors';
import type { Tenant } from './tenant';
import type { TenantStore } from './tenant-store';

export class MemoryTenantStore implements TenantStore {
  private readonly tenants = new Map<string, Tenant>();

  constructor(private readonly outbox: MemoryOutbox) {}

  async insert(tenant: Tenant, outbox?: AuditEvent[]): Promise<void> {
    if (this.tenants.has(tenant.id)) throw new DuplicateRecord('Tenant');
    this.tenants.set(tenant.id, structuredClone(tenant));
    this.outbox.add(`tenant:${tenant.id}`, outbox);
  }

  async get(tenantId: string): Promise<Tenant | null> {
    const t = this.tenants.get(tenantId);
    return t ? structuredClone(t) : null;
  }
}
