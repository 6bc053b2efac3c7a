import { foundOr, newId, type CallerContext } from '@mandate/shared/core';
import { type Page } from '@mandate/shared/contract';
import { readPage } from '../common/store';
import { MAX_WRITE_ATTEMPTS, nowIso, recordedEvent, relay, type IdentityDeps } from '../common/deps';
import { ConcurrentModification } from '../common/errors';
import type { Plan } from '../tenants/tenant';
import {
  LastAdministrator,
  RoleAssignmentNotFound,
  assignableRoles,
  isAdministrator,
  permissionsOf,
  revoked,
  withRoles,
  type RoleAssignment,
  type RoleAssignmentStatus,
} from './roles';

export interface ResolvedSubject {
  assignment: RoleAssignment;
  plan: Plan;
}

/** A change as the domain decided it, with what its event records beyond the assignment. */
interface AssignmentChange {
  next: RoleAssignment;
  type: 'TENANT_ROLE_ASSIGNED' | 'TENANT_ROLE_REVOKED';
  data?: { previous_roles?: string[] };
}

function assignmentEvent(deps: IdentityDeps, change: AssignmentChange, caller?: CallerContext) {
  const a = change.next;
  return recordedEvent(
    deps,
    {
      type: change.type,
      tenantId: a.tenant_id,
      resource: { type: 'role_assignment', id: a.id },
      data: {
        id: a.id,
        subject_id: a.subject_id,
        roles: a.roles,
        permissions: a.permissions,
        status: a.status,
        ...change.data,
      },
    },
    caller,
  );
}

/**
 * Read → decide → guarded write: the write lands only while the assignment is as read, else it
 * is read and decided again. `decide` throws to refuse.
 *
 * A tenant always keeps an administrator (an active assignment holding tenant:write). The tenant's
 * admin count (one document, see the store) is the guard, since no transaction spans assignments:
 * a change that makes an admin a non-admin first takes one from the count, which refuses to go
 * below one (409), and gives it back if its own write then loses; a change that makes an admin adds
 * one after its write. So the count is never above the real number of admins, and of two admins
 * revoking each other at once exactly one passes the count's conditional update.
 */
/** The first pause before the admin count is asked again (doubling; 10 + 20 + 40 + 80 ms in all). */
const LAST_ADMIN_RECHECK_MS = 10;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function changeAssignment(
  deps: IdentityDeps,
  tenantId: string,
  id: string,
  caller: CallerContext | undefined,
  decide: (current: RoleAssignment, at: string) => AssignmentChange,
): Promise<RoleAssignment> {
  const admins = deps.store.roleAssignments;
  for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
    const current = await getRoleAssignment(deps, tenantId, id);
    const change = decide(current, nowIso(deps));
    const leaves = isAdministrator(current) && !isAdministrator(change.next);
    const joins = !isAdministrator(current) && isAdministrator(change.next);
    if (leaves || joins) await admins.ensureAdminCount(tenantId);
    if (leaves && !(await admins.leaveAdmin(tenantId))) {
      // The count may be one short for a moment: a concurrent change that made an admin counts it
      // only after its own write (so the count is never above the truth). Read again after a
      // pause, in case that is what this change is seeing; refuse only when it holds every time.
      if (attempt + 1 >= MAX_WRITE_ATTEMPTS) throw new LastAdministrator();
      await sleep(LAST_ADMIN_RECHECK_MS * 2 ** attempt);
      continue;
    }
    const events = [assignmentEvent(deps, change, caller)];
    const written = await admins.replace(tenantId, current, change.next, events);
    if (written) {
      if (joins) await admins.joinAdmin(tenantId);
      await relay(deps, events);
      return written;
    }
    // Lost to a concurrent change of this assignment: what this one took from the count goes back.
    if (leaves) await admins.joinAdmin(tenantId);
  }
  throw new ConcurrentModification('Role assignment');
}

export async function assignRoles(
  deps: IdentityDeps,
  tenantId: string,
  input: { subjectId: string; roles: readonly string[] },
  caller?: CallerContext,
): Promise<RoleAssignment> {
  const roles = assignableRoles(input.roles);
  const at = nowIso(deps);
  const assignment: RoleAssignment = {
    id: newId('ras'),
    tenant_id: tenantId,
    subject_id: input.subjectId,
    roles,
    permissions: permissionsOf(roles),
    status: 'active',
    created_at: at,
    updated_at: at,
  };
  const events = [assignmentEvent(deps, { next: assignment, type: 'TENANT_ROLE_ASSIGNED' }, caller)];
  // A new admin counts once its assignment is stored (the count never exceeds the real admins).
  const joins = isAdministrator(assignment);
  if (joins) await deps.store.roleAssignments.ensureAdminCount(tenantId);
  // The partial unique index refuses a second active assignment (DuplicateRoleAssignment → 409).
  await deps.store.roleAssignments.insert(tenantId, assignment, events);
  if (joins) await deps.store.roleAssignments.joinAdmin(tenantId);
  await relay(deps, events);
  return assignment;
}

export function listRoleAssignments(
  deps: IdentityDeps,
  tenantId: string,
  options: { limit: number; after?: string; subjectId?: string; status?: RoleAssignmentStatus },
): Promise<Page<RoleAssignment>> {
  const { subjectId, status } = options;
  return readPage(
    options,
    (window) => deps.store.roleAssignments.list(tenantId, { ...window, subjectId, status }),
    (a) => a.id,
  );
}

export function getRoleAssignment(deps: IdentityDeps, tenantId: string, id: string): Promise<RoleAssignment> {
  return foundOr(deps.store.roleAssignments.get(tenantId, id), () => new RoleAssignmentNotFound());
}

/** Replaces the roles of an active assignment; the stored permissions follow (see withRoles). */
export async function updateRoleAssignment(
  deps: IdentityDeps,
  tenantId: string,
  id: string,
  input: { roles: readonly string[]; subjectId?: string },
  caller?: CallerContext,
): Promise<RoleAssignment> {
  const roles = assignableRoles(input.roles);
  const by = { subjectId: input.subjectId, callerSubjectId: caller?.actor.subject_id };
  return changeAssignment(deps, tenantId, id, caller, (current, at) => ({
    next: withRoles(current, roles, at, by),
    type: 'TENANT_ROLE_ASSIGNED',
    data: { previous_roles: current.roles },
  }));
}

/** active → revoked (see revoked); never the tenant's last admin (see changeAssignment). */
export async function revokeRoleAssignment(
  deps: IdentityDeps,
  tenantId: string,
  id: string,
  caller?: CallerContext,
): Promise<RoleAssignment> {
  return changeAssignment(deps, tenantId, id, caller, (current, at) => ({
    next: revoked(current, at, caller?.actor.subject_id),
    type: 'TENANT_ROLE_REVOKED',
  }));
}

/** The gateway's JWT step: a subject's active assignment in a tenant, and the tenant's plan. */
export async function resolveSubject(
  deps: IdentityDeps,
  tenantId: string,
  subjectId: string,
): Promise<ResolvedSubject> {
  const [assignment, tenant] = await Promise.all([
    deps.store.roleAssignments.findActive(tenantId, subjectId),
    deps.store.tenants.get(tenantId),
  ]);
  if (!assignment || !tenant) throw new RoleAssignmentNotFound();
  return { assignment, plan: tenant.plan };
}
