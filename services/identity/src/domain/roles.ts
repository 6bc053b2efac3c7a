/** SPEC §4: the roles a tenant can assign and the permissions each one grants. */
export const ROLE_PERMISSIONS = {
  tenant_admin: [
    'tenant:read',
    'tenant:write',
    'tenants:admin',
    'mandates:read',
    'mandates:write',
    'verify',
    'events:read',
  ],
  tenant_operator: ['mandates:read', 'mandates:write', 'verify', 'events:read'],
  tenant_viewer: ['tenant:read', 'mandates:read'],
  tenant_auditor: ['tenant:read', 'mandates:read', 'events:read'],
} as const;

export type Role = keyof typeof ROLE_PERMISSIONS;
export const ROLES = Object.keys(ROLE_PERMISSIONS) as [Role, ...Role[]];

export const ROLE_ASSIGNMENT_STATUSES = ['active', 'revoked'] as const;
export type RoleAssignmentStatus = (typeof ROLE_ASSIGNMENT_STATUSES)[number];

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

/** The union of the roles' permissions, in a stable order. */
export function permissionsOf(roles: readonly Role[]): string[] {
  const set = new Set<string>();
  for (const role of roles) for (const p of ROLE_PERMISSIONS[role]) set.add(p);
  return [...set].sort();
}

/**
 * Canonical subjects (SPEC §4): `wallet:<id>`, `dashboard:<id>`, `oidc:<provider>:<id>`.
 * Identifiers may contain colons themselves (a wallet DID), but never whitespace.
 */
export const SUBJECT_ID_PATTERN = /^(?:wallet:\S+|dashboard:\S+|oidc:[A-Za-z0-9._-]+:\S+)$/;
export const SUBJECT_ID_MAX = 256;

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
