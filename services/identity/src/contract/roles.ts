import { defineRoute, listQueryShape, pageSchema } from '@mandate/shared';
import { z } from 'zod';
import { ROLES, ROLE_ASSIGNMENT_STATUSES, SUBJECT_ID_MAX } from './wire';
import { subjectIdSchema, tenantParams, timestamp } from './common';

// Role assignments: schemas and routes.

/**
 * Role names are checked by the domain, not here: a platform role must answer 403 (SPEC §4),
 * which an enum check would turn into a 400.
 */
const rolesInput = z
  .array(z.string().min(1).max(100))
  .min(1)
  .max(ROLES.length)
  .describe(`Any of: ${ROLES.join(', ')}`);

export const createRoleAssignmentBody = z.strictObject({
  subject_id: subjectIdSchema,
  roles: rolesInput,
});

export const updateRoleAssignmentBody = z.strictObject({
  roles: rolesInput,
  subject_id: subjectIdSchema.optional().describe("If given, must be the assignment's subject"),
});

export const listRoleAssignmentsQuery = z.strictObject({
  ...listQueryShape,
  subject_id: z.string().max(SUBJECT_ID_MAX).optional(),
  status: z.enum(ROLE_ASSIGNMENT_STATUSES).optional(),
});

export const roleAssignmentParams = z.object({ tenantId: z.string(), id: z.string() });

export const roleAssignmentSchema = z.object({
  id: z.string(),
  tenant_id: z.string(),
  subject_id: z.string(),
  roles: z.array(z.enum(ROLES)),
  permissions: z.array(z.string()).describe('The effective permissions, stored with the assignment'),
  status: z.enum(ROLE_ASSIGNMENT_STATUSES),
  created_at: timestamp,
  updated_at: timestamp,
});

export const roleRoutes = {
  listRoleAssignments: defineRoute({
    operationId: 'listRoleAssignments',
    summary: 'List role assignments, newest first',
    tags: ['roles'],
    method: 'GET',
    path: '/v1/tenants/:tenantId/role-assignments',
    service: 'identity',
    auth: 'tenant',
    scope: 'tenants:admin',
    permissions: ['tenant:read', 'tenant:write'],
    request: { params: tenantParams, query: listRoleAssignmentsQuery },
    responses: { 200: { description: 'A page of assignments', schema: pageSchema(roleAssignmentSchema) } },
  }),
  createRoleAssignment: defineRoute({
    operationId: 'createRoleAssignment',
    summary: 'Assign roles to a subject (one active assignment per subject)',
    tags: ['roles'],
    method: 'POST',
    path: '/v1/tenants/:tenantId/role-assignments',
    service: 'identity',
    auth: 'tenant',
    scope: 'tenants:admin',
    permissions: ['tenant:write'],
    request: { params: tenantParams, body: createRoleAssignmentBody },
    responses: { 201: { description: 'The assignment', schema: roleAssignmentSchema } },
    errors: {
      403: 'A platform role cannot be assigned',
      409: 'The subject already has an active assignment',
    },
  }),
  getRoleAssignment: defineRoute({
    operationId: 'getRoleAssignment',
    summary: 'Get a role assignment',
    tags: ['roles'],
    method: 'GET',
    path: '/v1/tenants/:tenantId/role-assignments/:id',
    service: 'identity',
    auth: 'tenant',
    scope: 'tenants:admin',
    permissions: ['tenant:read', 'tenant:write'],
    request: { params: roleAssignmentParams },
    responses: { 200: { description: 'The assignment', schema: roleAssignmentSchema } },
  }),
  updateRoleAssignment: defineRoute({
    operationId: 'updateRoleAssignment',
    summary: "Replace an active assignment's roles",
    tags: ['roles'],
    method: 'PATCH',
    path: '/v1/tenants/:tenantId/role-assignments/:id',
    service: 'identity',
    auth: 'tenant',
    scope: 'tenants:admin',
    permissions: ['tenant:write'],
    request: { params: roleAssignmentParams, body: updateRoleAssignmentBody },
    responses: { 200: { description: 'The updated assignment', schema: roleAssignmentSchema } },
    errors: { 403: 'A platform role cannot be assigned', 409: 'The assignment is revoked' },
  }),
  revokeRoleAssignment: defineRoute({
    operationId: 'revokeRoleAssignment',
    summary: 'Revoke a role assignment (not your own active one)',
    tags: ['roles'],
    method: 'POST',
    path: '/v1/tenants/:tenantId/role-assignments/:id/revoke',
    service: 'identity',
    auth: 'tenant',
    scope: 'tenants:admin',
    permissions: ['tenant:write'],
    request: { params: roleAssignmentParams },
    responses: { 200: { description: 'The revoked assignment', schema: roleAssignmentSchema } },
    errors: { 409: "Already revoked, or the caller's own active assignment" },
  }),
};
