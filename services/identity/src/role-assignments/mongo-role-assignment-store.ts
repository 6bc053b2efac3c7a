import { queryShapesOf, type AuditEvent, type MongoQueryShape, type StoredAs } from '@mandate/shared';
import type { FilterQuery } from 'mongoose';
import { DuplicateRecord } from '../common/errors';
import { CollectionStore, identitySchema, indexOutbox, iso } from '../common/mongo';
import { DuplicateRoleAssignment, type RoleAssignment, type RoleAssignmentStatus } from './roles';
import type { RoleAssignmentStore } from './role-assignment-store';
import type { ListOptions } from '../common/store';

export interface RoleAssignmentDoc extends StoredAs<RoleAssignment, 'created_at' | 'updated_at', 'id'> {
  assignment_id: string;
}

export const roleAssignmentSchema = identitySchema<RoleAssignmentDoc>('role_assignments', {
  tenant_id: { type: String, required: true },
  assignment_id: { type: String, required: true },
  subject_id: { type: String, required: true },
  roles: { type: [String], required: true },
  permissions: { type: [String], required: true },
  status: { type: String, required: true },
  created_at: { type: Date, required: true },
  updated_at: { type: Date, required: true },
});
// get, replace: { tenant_id, assignment_id } (status, roles, updated_at checked on the one document found);
// list without filters: { tenant_id, assignment_id < cursor } sorted { assignment_id: -1 }, this index walked backwards.
roleAssignmentSchema.index({ tenant_id: 1, assignment_id: 1 }, { unique: true });
// list?subject_id=: { tenant_id, subject_id, assignment_id < cursor } sorted { assignment_id: -1 }
// (status checked on the documents found). The partial index below cannot serve it: it holds active ones only.
roleAssignmentSchema.index({ tenant_id: 1, subject_id: 1, assignment_id: -1 });
// list?status=: { tenant_id, status, assignment_id < cursor } sorted { assignment_id: -1 }.
roleAssignmentSchema.index({ tenant_id: 1, status: 1, assignment_id: -1 });
// findActive: { tenant_id, subject_id, status: 'active' } for JWT callers; partial unique so the database, not a
// check-then-insert, keeps one ACTIVE assignment per subject per tenant (revoked ones may pile up).
roleAssignmentSchema.index(
  { tenant_id: 1, subject_id: 1 },
  { unique: true, partialFilterExpression: { status: 'active' }, name: 'one_active_assignment_per_subject' },
);
indexOutbox(roleAssignmentSchema);

const shapes = queryShapesOf('role_assignments', 'assignment_id');

/** Every query below, for the index-coverage test. */
export const ROLE_ASSIGNMENT_QUERY_SHAPES: MongoQueryShape[] = [
  shapes.find('roleAssignments.get / replace', ['tenant_id', 'assignment_id'], {
    residual: ['status', 'roles', 'updated_at'],
  }),
  shapes.find('roleAssignments.findActive', ['tenant_id', 'subject_id', 'status']),
  shapes.page('roleAssignments.list', ['tenant_id']),
  shapes.page('roleAssignments.list?subject_id=', ['tenant_id', 'subject_id'], { residual: ['status'] }),
  shapes.page('roleAssignments.list?status=', ['tenant_id', 'status']),
];

export class MongoRoleAssignmentStore
  extends CollectionStore<RoleAssignmentDoc, RoleAssignment>
  implements RoleAssignmentStore
{
  async insert(tenantId: string, a: RoleAssignment, outbox?: AuditEvent[]): Promise<void> {
    const doc = {
      tenant_id: tenantId,
      assignment_id: a.id,
      subject_id: a.subject_id,
      roles: a.roles,
      permissions: a.permissions,
      status: a.status,
      created_at: new Date(a.created_at),
      updated_at: new Date(a.updated_at),
    };
    await this.insertWithEvents(doc, outbox, (keyPattern) =>
      'subject_id' in keyPattern ? new DuplicateRoleAssignment() : new DuplicateRecord('Role assignment'),
    );
  }

  get(tenantId: string, id: string): Promise<RoleAssignment | null> {
    return this.findOneOut({ tenant_id: tenantId, assignment_id: id });
  }

  findActive(tenantId: string, subjectId: string): Promise<RoleAssignment | null> {
    return this.findOneOut({ tenant_id: tenantId, subject_id: subjectId, status: 'active' });
  }

  list(
    tenantId: string,
    { limit, before, subjectId, status }: ListOptions & { subjectId?: string; status?: RoleAssignmentStatus },
  ): Promise<RoleAssignment[]> {
    const filter: FilterQuery<RoleAssignmentDoc> = { tenant_id: tenantId };
    if (subjectId !== undefined) filter.subject_id = subjectId;
    if (status !== undefined) filter.status = status;
    return this.pageOut({ filter, key: 'assignment_id', before, limit });
  }

  replace(
    tenantId: string,
    current: RoleAssignment,
    next: RoleAssignment,
    outbox?: AuditEvent[],
  ): Promise<RoleAssignment | null> {
    // The fields the caller decided on are the guard: the change and its events land together, or not at all.
    return this.updateOut(
      {
        tenant_id: tenantId,
        assignment_id: current.id,
        status: current.status,
        roles: current.roles,
        updated_at: new Date(current.updated_at),
      },
      {
        roles: next.roles,
        permissions: next.permissions,
        status: next.status,
        updated_at: new Date(next.updated_at),
      },
      outbox,
    );
  }

  protected out(d: RoleAssignmentDoc): RoleAssignment {
    return {
      id: d.assignment_id,
      tenant_id: d.tenant_id,
      subject_id: d.subject_id,
      roles: [...d.roles],
      permissions: [...d.permissions],
      status: d.status,
      created_at: iso(d.created_at),
      updated_at: iso(d.updated_at),
    };
  }
}
