import { callerOf, implement, type Implementation } from '@mandate/shared/http';
import { orNull } from '../http/lookup';
import { pick } from '../http/view';
import { internalRoutes, routes } from '../contract';
import type { Deps } from '../deps';
import { pageView, pageWindow } from '../http/pages';
import { pathTenant } from '../http/tenancy';
import {
  assignRoles,
  getRoleAssignment,
  listRoleAssignments,
  resolveSubject,
  revokeRoleAssignment,
  updateRoleAssignment,
} from './role-assignments';
import type { RoleAssignment } from './roles';

/** The one place a stored role assignment becomes a response body. */
export const roleAssignmentView = (a: RoleAssignment) =>
  pick(a, ['id', 'tenant_id', 'subject_id', 'roles', 'permissions', 'status', 'created_at', 'updated_at']);

export const roleAssignmentHandlers = (deps: Deps): Implementation[] => [
  implement(routes.createRoleAssignment)(async ({ body }, req) => {
    const tenantId = pathTenant(req);
    const value = await assignRoles(
      deps,
      tenantId,
      {
        subjectId: body.subject_id,
        roles: body.roles,
      },
      callerOf(req),
    );
    return { status: 201, body: roleAssignmentView(value) };
  }),
  implement(routes.listRoleAssignments)(async ({ query }, req) => {
    const tenantId = pathTenant(req);
    const page = await listRoleAssignments(deps, tenantId, {
      ...pageWindow(query),
      subjectId: query.subject_id,
      status: query.status,
    });
    return { status: 200, body: pageView(page, roleAssignmentView) };
  }),

  implement(routes.getRoleAssignment)(async ({ params }, req) => ({
    status: 200,
    body: roleAssignmentView(await getRoleAssignment(deps, pathTenant(req), params.id)),
  })),
  implement(routes.updateRoleAssignment)(async ({ params, body }, req) => {
    const tenantId = pathTenant(req);
    const value = await updateRoleAssignment(
      deps,
      tenantId,
      params.id,
      { roles: body.roles, subjectId: body.subject_id },
      callerOf(req),
    );
    return { status: 200, body: roleAssignmentView(value) };
  }),

  implement(routes.revokeRoleAssignment)(async ({ params }, req) => {
    const tenantId = pathTenant(req);
    const value = await revokeRoleAssignment(deps, tenantId, params.id, callerOf(req));
    return { status: 200, body: roleAssignmentView(value) };
  }),
];

/** For the gateway: a JWT's subject resolved to its roles, permissions and plan. */
export const roleAssignmentInternalHandlers = (deps: Deps): Implementation[] => {
  const subjectAnswer = async (item: { tenant_id: string; subject_id: string }) => {
    const { assignment, plan } = await resolveSubject(deps, item.tenant_id, item.subject_id);
    return {
      tenant_id: assignment.tenant_id,
      subject_id: assignment.subject_id,
      assignment_id: assignment.id,
      roles: assignment.roles,
      permissions: assignment.permissions,
      plan,
    };
  };
  return [
    implement(internalRoutes.resolveSubject)(async ({ body }) => ({
      status: 200,
      body: await subjectAnswer(body),
    })),
    implement(internalRoutes.resolveSubjects)(async ({ body }) => ({
      status: 200,
      body: { results: await Promise.all(body.items.map((item) => orNull(subjectAnswer(item)))) },
    })),
  ];
};
