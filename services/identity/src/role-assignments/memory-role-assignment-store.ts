import { takeMatching, valueFor } from '@mandate/shared/core';
import { type AuditEvent, type MemoryOutbox } from '@mandate/shared/events';
import { FilterIndexes } from '@mandate/shared/data';
import { DuplicateRecord } from '../common/errors';
import type { ListOptions } from '../common/store';
import {
  DuplicateRoleAssignment,
  isAdministrator,
  type RoleAssignment,
  type RoleAssignmentStatus,
} from './roles';
import type { RoleAssignmentStore } from './role-assignment-store';

type TenantIds = FilterIndexes<{ subject: string; status: RoleAssignmentStatus }>;

/**
 * Ids kept sorted per tenant and per filter value (subject, status), so a page costs
 * O(log n + limit); a list filtered by both subject and status walks the subject's ids.
 */
export class MemoryRoleAssignmentStore implements RoleAssignmentStore {
  /** tenant_id → id → assignment */
  private readonly assignments = new Map<string, Map<string, RoleAssignment>>();
  /** tenant_id → assignment ids sorted: all, by subject_id, by status */
  private readonly assignmentIds = new Map<string, TenantIds>();

  /** tenant_id → its administrator count (see RoleAssignmentStore.ensureAdminCount). */
  private readonly adminCounts = new Map<string, number>();

  constructor(private readonly outbox: MemoryOutbox) {}

  async ensureAdminCount(tenantId: string): Promise<void> {
    if (this.adminCounts.has(tenantId)) return;
    const all = [...(this.assignments.get(tenantId)?.values() ?? [])];
    this.adminCounts.set(tenantId, all.filter(isAdministrator).length);
  }

  async leaveAdmin(tenantId: string): Promise<boolean> {
    const count = this.adminCounts.get(tenantId) ?? 0;
    if (count < 2) return false;
    this.adminCounts.set(tenantId, count - 1);
    return true;
  }

  async joinAdmin(tenantId: string): Promise<void> {
    this.adminCounts.set(tenantId, (this.adminCounts.get(tenantId) ?? 0) + 1);
  }

  private tenantAssignments(tenantId: string): Map<string, RoleAssignment> {
    let m = this.assignments.get(tenantId);
    if (!m) this.assignments.set(tenantId, (m = new Map()));
    return m;
  }

  private tenantIds(tenantId: string): TenantIds {
    return valueFor(this.assignmentIds, tenantId, () => new FilterIndexes());
  }

  /** The subject's assignments in the tenant (a few), newest first. */
  private subjectAssignments(tenantId: string, subjectId: string): RoleAssignment[] {
    const all = this.assignments.get(tenantId);
    const ids = this.assignmentIds.get(tenantId)?.under('subject', subjectId);
    return all && ids ? [...ids.newestFirst()].map((id) => all.get(id)!) : [];
  }

  async insert(tenantId: string, assignment: RoleAssignment, outbox?: AuditEvent[]): Promise<void> {
    const all = this.tenantAssignments(tenantId);
    if (all.has(assignment.id)) throw new DuplicateRecord('Role assignment');
    // Mirrors the partial unique index {tenant_id, subject_id} where status = 'active'.
    // Checked and written in one synchronous step, so concurrent inserts cannot interleave.
    const subject = this.subjectAssignments(tenantId, assignment.subject_id);
    if (assignment.status === 'active' && subject.some((a) => a.status === 'active'))
      throw new DuplicateRoleAssignment();
    all.set(assignment.id, structuredClone({ ...assignment, tenant_id: tenantId }));
    this.tenantIds(tenantId).add(assignment.id, {
      subject: assignment.subject_id,
      status: assignment.status,
    });
    this.outbox.add(`role_assignment:${tenantId}:${assignment.id}`, outbox);
  }

  async get(tenantId: string, id: string): Promise<RoleAssignment | null> {
    const a = this.assignments.get(tenantId)?.get(id);
    return a ? structuredClone(a) : null;
  }

  async findActive(tenantId: string, subjectId: string): Promise<RoleAssignment | null> {
    const active = this.subjectAssignments(tenantId, subjectId).find((a) => a.status === 'active');
    return active ? structuredClone(active) : null;
  }

  async list(
    tenantId: string,
    { limit, before, subjectId, status }: ListOptions & { subjectId?: string; status?: RoleAssignmentStatus },
  ): Promise<RoleAssignment[]> {
    const all = this.assignments.get(tenantId);
    const ids = this.assignmentIds.get(tenantId);
    if (!all || !ids) return [];
    const walk =
      subjectId !== undefined
        ? ids.under('subject', subjectId)
        : status !== undefined
          ? ids.under('status', status)
          : ids.all;
    if (!walk) return [];
    const matches = (id: string) => status === undefined || all.get(id)!.status === status;
    return takeMatching(walk.newestFirst(before), matches, limit).map((id) => structuredClone(all.get(id)!));
  }

  async replace(
    tenantId: string,
    current: RoleAssignment,
    next: RoleAssignment,
    outbox?: AuditEvent[],
  ): Promise<RoleAssignment | null> {
    const a = this.assignments.get(tenantId)?.get(current.id);
    const unchanged =
      a !== undefined &&
      a.status === current.status &&
      a.updated_at === current.updated_at &&
      a.roles.join() === current.roles.join();
    if (!unchanged) return null;
    this.tenantIds(tenantId).move(a.id, 'status', a.status, next.status);
    a.roles = [...next.roles];
    a.permissions = [...next.permissions];
    a.status = next.status;
    a.updated_at = next.updated_at;
    this.outbox.add(`role_assignment:${tenantId}:${a.id}`, outbox);
    return structuredClone(a);
  }
}
