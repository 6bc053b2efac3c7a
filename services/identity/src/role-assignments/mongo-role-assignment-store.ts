import { type AuditEvent } from '@mandate/shared/events';
import {
  isDuplicateKeyError,
  queryShapesOf,
  type MongoQueryShape,
  type StoredAs,
} from '@mandate/shared/data';
import { Schema, type FilterQuery, type Model } from 'mongoose';
import { DuplicateRecord } from '../common/errors';
import { CollectionStore, identitySchema, indexOutbox, iso } from '../common/mongo';
import {
  ADMIN_PERMISSION,
  DuplicateRoleAssignment,
  type RoleAssignment,
  type RoleAssignmentStatus,
} from './roles';
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

/**
 * A tenant's administrator count, one document per tenant: the guard of the last-admin rule.
 * MongoDB without transactions cannot hold an invariant across the assignment documents, so the one
 * number the rule needs lives in ONE document, moved by single-document conditional updates
 * (`findOneAndUpdate({admins: {$gte: 2}}, {$inc: -1})`): of two concurrent leaves of the last two
 * admins exactly one matches. The use case moves it so that it never exceeds the real number of
 * admins: down BEFORE an assignment stops being an admin, up AFTER one becomes one. A crash between
 * the two writes leaves it too low, which refuses a revocation that would have been allowed (never
 * the reverse); assigning another admin raises it again. No outbox: it records no audited change.
 */
export interface AdminCountDoc {
  tenant_id: string;
  admins: number;
}

export const adminCountSchema = new Schema<AdminCountDoc>(
  { tenant_id: { type: String, required: true }, admins: { type: Number, required: true } },
  { collection: 'tenant_admin_counts', versionKey: false, autoIndex: false },
);
// ensureAdminCount, leaveAdmin, joinAdmin: { tenant_id } (admins checked on the one document found);
// unique, so the first count of a tenant is inserted once.
adminCountSchema.index({ tenant_id: 1 }, { unique: true });

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
  shapes.find('roleAssignments.ensureAdminCount (count)', ['tenant_id', 'status'], {
    residual: ['permissions'],
  }),
  queryShapesOf('tenant_admin_counts').find(
    'roleAssignments.ensureAdminCount / leaveAdmin / joinAdmin',
    ['tenant_id'],
    { residual: ['admins'] },
  ),
];

export class MongoRoleAssignmentStore
  extends CollectionStore<RoleAssignmentDoc, RoleAssignment>
  implements RoleAssignmentStore
{
  constructor(
    model: Model<RoleAssignmentDoc>,
    private readonly adminCounts: Model<AdminCountDoc>,
  ) {
    super(model);
  }

  async ensureAdminCount(tenantId: string): Promise<void> {
    if (await this.adminCounts.exists({ tenant_id: tenantId })) return;
    // First use for this tenant: count once. Every writer ensures before its assignment write, so no
    // admin changes between this count and the insert unless the count already exists (then a no-op).
    const admins = await this.model.countDocuments({
      tenant_id: tenantId,
      status: 'active',
      permissions: ADMIN_PERMISSION,
    });
    await this.adminCounts
      .updateOne({ tenant_id: tenantId }, { $setOnInsert: { tenant_id: tenantId, admins } }, { upsert: true })
      .catch((err: unknown) => {
        // Two first uses raced on the upsert: the other inserted it, which is all this asked for.
        if (!isDuplicateKeyError(err)) throw err;
      });
  }

  async leaveAdmin(tenantId: string): Promise<boolean> {
    const left = await this.adminCounts
      .findOneAndUpdate({ tenant_id: tenantId, admins: { $gte: 2 } }, { $inc: { admins: -1 } }, { new: true })
      .lean();
    return left !== null;
  }

  async joinAdmin(tenantId: string): Promise<void> {
    await this.adminCounts.updateOne({ tenant_id: tenantId }, { $inc: { admins: 1 } });
  }

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
