import { pageBefore, queryShapesOf, type AuditEvent, type MongoQueryShape } from '@mandate/shared';
import type { Model } from 'mongoose';
import { DuplicateRecord } from '../common/errors';
import {
  HIDDEN,
  identitySchema,
  indexOutbox,
  insertUnique,
  iso,
  withOutbox,
  type WithOutbox,
} from '../common/mongo';
import type { Plan, Tenant, TenantStatus } from './tenant';
import type { TenantStore } from './tenant-store';
import type { ListOptions } from '../common/store';

export interface TenantDoc extends WithOutbox {
  tenant_id: string;
  name: string;
  plan: Plan;
  status: TenantStatus;
  created_at: Date;
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

function tenantOut(d: TenantDoc): Tenant {
  return { id: d.tenant_id, name: d.name, plan: d.plan, status: d.status, created_at: iso(d.created_at) };
}

export class MongoTenantStore implements TenantStore {
  constructor(private readonly tenants: Model<TenantDoc>) {}

  async insert(tenant: Tenant, outbox?: AuditEvent[]): Promise<void> {
    const doc = {
      tenant_id: tenant.id,
      name: tenant.name,
      plan: tenant.plan,
      status: tenant.status,
      created_at: new Date(tenant.created_at),
      ...withOutbox(outbox),
    };
    await insertUnique(this.tenants, doc, () => new DuplicateRecord('Tenant'));
  }

  async get(tenantId: string): Promise<Tenant | null> {
    const d = await this.tenants.findOne({ tenant_id: tenantId }, HIDDEN).lean<TenantDoc>();
    return d ? tenantOut(d) : null;
  }

  async list({ limit, before }: ListOptions): Promise<Tenant[]> {
    const docs = await pageBefore(this.tenants, {
      filter: {},
      key: 'tenant_id',
      before,
      limit,
      projection: HIDDEN,
    });
    return docs.map(tenantOut);
  }
}
