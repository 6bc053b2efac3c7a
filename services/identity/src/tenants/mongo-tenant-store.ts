import { type AuditEvent } from '@mandate/shared/events';
import { queryShapesOf, type MongoQueryShape, type StoredAs } from '@mandate/shared/data';
import { DuplicateRecord } from '../common/errors';
import { CollectionStore, identitySchema, indexOutbox, iso } from '../common/mongo';
import type { Tenant } from './tenant';
import type { TenantStore } from './tenant-store';
import type { ListOptions } from '../common/store';

export interface TenantDoc extends StoredAs<Tenant, 'created_at', 'id'> {
  tenant_id: string;
}

export const tenantSchema = identitySchema<TenantDoc>('tenants', {
  tenant_id: { type: String, required: true },
  name: { type: String, required: true },
  plan: { type: String, required: true },
  status: { type: String, required: true },
  created_at: { type: Date, required: true },
});
// get: { tenant_id }; also refuses a second tenant with the same id. list: { tenant_id < cursor } sorted
// { tenant_id: -1 }, this index walked backwards.
tenantSchema.index({ tenant_id: 1 }, { unique: true });
indexOutbox(tenantSchema);

const shapes = queryShapesOf('tenants', 'tenant_id');

/** Every query below, for the index-coverage test. */
export const TENANT_QUERY_SHAPES: MongoQueryShape[] = [
  shapes.find('tenants.get', ['tenant_id']),
  shapes.page('tenants.list', []),
];

export class MongoTenantStore extends CollectionStore<TenantDoc, Tenant> implements TenantStore {
  async insert(tenant: Tenant, outbox?: AuditEvent[]): Promise<void> {
    const doc = {
      tenant_id: tenant.id,
      name: tenant.name,
      plan: tenant.plan,
      status: tenant.status,
      created_at: new Date(tenant.created_at),
    };
    await this.insertWithEvents(doc, outbox, () => new DuplicateRecord('Tenant'));
  }

  get(tenantId: string): Promise<Tenant | null> {
    return this.findOneOut({ tenant_id: tenantId });
  }

  list({ limit, before }: ListOptions): Promise<Tenant[]> {
    return this.pageOut({ filter: {}, key: 'tenant_id', before, limit });
  }

  protected out(d: TenantDoc): Tenant {
    return { id: d.tenant_id, name: d.name, plan: d.plan, status: d.status, created_at: iso(d.created_at) };
  }
}
