import type { AuditEvent } from '@mandate/shared/events';
import type { ListOptions } from '../common/store';
import type { RoleAssignment, RoleAssignmentStatus } from './roles';

export interface RoleAssignmentStore {
  /**
   * Stores the assignment and its events in one insert; a second active assignment for the
   * subject in the tenant is DuplicateRoleAssignment (a partial unique index decides).
   */
  insert(tenantId: string, assignment: RoleAssignment, outbox?: AuditEvent[]): Promise<void>;
  get(tenantId: string, id: string): Promise<RoleAssignment | null>;
  findActive(tenantId: string, subjectId: string): Promise<RoleAssignment | null>;
  /** Newest first, optionally only one subject's or one status's. */
  list(
    tenantId: string,
    options: ListOptions & { subjectId?: string; status?: RoleAssignmentStatus },
  ): Promise<RoleAssignment[]>;
  /**
   * The guarded write of every change (new roles, revocation): stores `next`'s roles, permissions,
   * status and updated_at with its events, only while the stored assignment is still `current` as
   * the caller read it (status, roles, updated_at). The assignment as written, or null when it is
   * absent or changed meanwhile.
   */
  replace(
    tenantId: string,
    current: RoleAssignment,
    next: RoleAssignment,
    outbox?: AuditEvent[],
  ): Promise<RoleAssignment | null>;
  /**
   * The tenant's administrator count (active assignments holding tenant:write), the guard that keeps
   * a tenant from losing its last admin. Counted from the assignments once, the first time (an insert
   * a unique index keeps single); from then on only leaveAdmin and joinAdmin move it.
   */
  ensureAdminCount(tenantId: string): Promise<void>;
  /** One admin leaves: the count goes down by one only while it is at least 2. False: it is the last. */
  leaveAdmin(tenantId: string): Promise<boolean>;
  /** One admin joins (or a leave whose assignment write did not land is given back). */
  joinAdmin(tenantId: string): Promise<void>;
}
