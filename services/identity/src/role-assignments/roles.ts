import { AppError, badRequest } from '@mandate/shared/core';
import {
  ROLE_PERMISSIONS,
  ROLES,
  SUBJECT_ID_MAX,
  SUBJECT_ID_PATTERN,
  type Role,
  type RoleAssignmentStatus,
} from '../contract/wire';

// Wire vocabulary: the contract's.
export { ROLE_PERMISSIONS, ROLES, SUBJECT_ID_MAX, SUBJECT_ID_PATTERN, type Role, type RoleAssignmentStatus };
export { ROLE_ASSIGNMENT_STATUSES } from '../contract/wire';

export interface RoleAssignment {
  id: string;
  tenant_id: string;
  subject_id: string;
  roles: Role[];
  /** The effective set, stored so a later change of the role table does not silently widen old grants. */
  permissions: string[];
  status: RoleAssignmentStatus;
  created_at: string;
  updated_at: string;
}

/** The permission that makes an assignment an administrator of its tenant (tenant_admin grants it). */
export const ADMIN_PERMISSION = 'tenant:write';

/** An active assignment holding tenant:write: what the last-admin rule counts. */
export function isAdministrator(a: Pick<RoleAssignment, 'status' | 'permissions'>): boolean {
  return a.status === 'active' && a.permissions.includes(ADMIN_PERMISSION);
}

/** Revoking or downgrading the tenant's last administrator (docs/API.md: a tenant always keeps one). */
export class LastAdministrator extends AppError {
  constructor() {
    super(
      'CONFLICT',
      'Cannot revoke or downgrade the last active tenant_admin assignment: assign another first',
    );
  }
}

/** The union of the roles' permissions, in a stable order. */
export function permissionsOf(roles: readonly Role[]): string[] {
  const set = new Set<string>();
  for (const role of roles) for (const p of ROLE_PERMISSIONS[role]) set.add(p);
  return [...set].sort();
}

export function isSubjectId(value: string): boolean {
  return value.length <= SUBJECT_ID_MAX && SUBJECT_ID_PATTERN.test(value);
}

/** Platform roles exist, but only the operator surface could ever grant them. */
export function isPlatformRole(role: string): boolean {
  return role === 'platform_admin' || role.startsWith('platform:');
}

export function isRole(value: string): value is Role {
  return Object.prototype.hasOwnProperty.call(ROLE_PERMISSIONS, value);
}

export class RoleAssignmentNotFound extends AppError {
  constructor() {
    super('NOT_FOUND', 'Role assignment not found');
  }
}

/** The database refused a second active assignment for the same subject in the same tenant. */
export class DuplicateRoleAssignment extends AppError {
  constructor() {
    super('CONFLICT', 'Subject already has an active role assignment in this tenant');
  }
}

/** platform_admin and platform:* exist only outside the tenant surface (docs/API.md, "Authentication"). */
export class RoleNotAssignable extends AppError {
  constructor(role: string) {
    super('FORBIDDEN', `Role cannot be assigned through the tenant API: ${role}`);
  }
}

/** A role-assignment change its current status does not allow (revoked, or the caller's own). */
export class RoleAssignmentConflict extends AppError {
  constructor(message: string) {
    super('CONFLICT', message);
  }
}

/**
 * Roles as a tenant may grant them: platform roles are refused outright (403, docs/API.md, "Authentication") before
 * unknown names (400), so probing for platform roles never looks like a typo.
 */
export function assignableRoles(requested: readonly string[]): Role[] {
  const platform = requested.find(isPlatformRole);
  if (platform !== undefined) throw new RoleNotAssignable(platform);
  requested.forEach((role, i) => {
    if (!isRole(role)) throw badRequest(`roles.${i} must be one of: ${ROLES.join(', ')}`);
  });
  return [...new Set(requested as Role[])];
}

/**
 * The assignment with new roles (its permissions follow), or the refusal. A caller cannot drop
 * tenant:write from its own active assignment (docs/API.md, "Hardening"), for the same reason it cannot revoke
 * it: a tenant must not lose its last admin by accident.
 */
export function withRoles(
  current: RoleAssignment,
  roles: Role[],
  at: string,
  by: { subjectId?: string; callerSubjectId?: string },
): RoleAssignment {
  if (by.subjectId !== undefined && by.subjectId !== current.subject_id) {
    throw badRequest('subject_id cannot be changed; revoke and assign instead');
  }
  const permissions = permissionsOf(roles);
  if (
    by.callerSubjectId !== undefined &&
    current.subject_id === by.callerSubjectId &&
    current.status === 'active' &&
    current.permissions.includes('tenant:write') &&
    !permissions.includes('tenant:write')
  ) {
    throw new RoleAssignmentConflict('Cannot downgrade your own active role assignment');
  }
  if (current.status !== 'active') throw new RoleAssignmentConflict('Role assignment is revoked');
  return { ...current, roles, permissions, updated_at: at };
}

/** active → revoked, or the refusal: a caller cannot revoke its own active assignment (docs/API.md, "Tenants, role assignments, onboarding, widget"). */
export function revoked(current: RoleAssignment, at: string, callerSubjectId?: string): RoleAssignment {
  if (current.status !== 'active') throw new RoleAssignmentConflict('Role assignment is already revoked');
  if (callerSubjectId !== undefined && current.subject_id === callerSubjectId) {
    throw new RoleAssignmentConflict('Cannot revoke your own active role assignment');
  }
  return { ...current, status: 'revoked', updated_at: at };
}
