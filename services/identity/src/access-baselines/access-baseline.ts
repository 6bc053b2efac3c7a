import type { Actor } from '@mandate/shared/core';
import type { ApiKeyScope, ApiKeyStatus } from '../api-keys/api-key';
import type { Role, RoleAssignmentStatus } from '../role-assignments/roles';

/**
 * Drift monitoring (docs/DASHBOARD.md): the tenant's access configuration as it was when an admin saved
 * it, to compare later states and the audit trail against. One per tenant; saving replaces it.
 */
export interface AccessSnapshot {
  api_keys: { key_id: string; name: string; scopes: ApiKeyScope[]; status: ApiKeyStatus }[];
  role_assignments: { id: string; subject_id: string; roles: Role[]; status: RoleAssignmentStatus }[];
  widget_allowed_origins: string[];
  /** More keys or assignments than MAX_SNAPSHOT_ITEMS: the newest ones are kept. */
  truncated: boolean;
}

export interface AccessBaseline {
  tenant_id: string;
  saved_at: string;
  saved_by: Actor;
  snapshot: AccessSnapshot;
}

/** Keys and assignments each; keeps a baseline document far below MongoDB's 16 MiB. */
export const MAX_SNAPSHOT_ITEMS = 1000;
