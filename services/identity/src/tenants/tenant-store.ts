import type { AuditEvent } from '@mandate/shared/events';
import type { ListOptions } from '../common/store';
import type { Tenant } from './tenant';

export interface TenantStore {
  /** Stores the tenant and its events in one write; a second tenant with the same id is DuplicateRecord. */
  insert(tenant: Tenant, outbox?: AuditEvent[]): Promise<void>;
  get(tenantId: string): Promise<Tenant | null>;
  /** Every tenant of the platform by id, descending (generated ids sort by creation: newest first). */
  list(options: ListOptions): Promise<Tenant[]>;
}
