import { defineRoutes, listing, listQueryShape, routeGroup } from '@mandate/shared/contract';
import { z } from 'zod';
import { ROLES, ROLE_ASSIGNMENT_STATUSES, SUBJECT_ID_MAX } from './wire';
import { subjectIdSchema, timestamp, TENANT_ADMIN_ROUTE } from './common';

// Role assignments: schemas and routes.

/**
 * Role names are checked by the domain, not here: a platform role must answer 403 (docs/API.md, "Authentication"),
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

export const roleAssignmentSchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    subject_id: z.string(),
    roles: z.array(z.enum(ROLES)),
    permissions: z.array(z.string()).describe('The effective permissions, stored with the assignment'),
    status: z.enum(ROLE_ASSIGNMENT_STATUSES),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'RoleAssignment' });

/** Who holds which role: a JWT caller reads them with tenant:read or tenant:write, changes them with tenant:write. */
const roles = { ...TENANT_ADMIN_ROUTE, tags: ['roles'] } as const;
const roleReads = routeGroup({ ...roles, permissions: ['tenant:read', 'tenant:write'] });
const roleWrites = routeGroup({ ...roles, permissions: ['tenant:write'] });

export const roleRoutes = defineRoutes({
  listRoleAssignments: roleReads.get('/v1/tenants/:tenantId/role-assignments', {
    summary: 'List role assignments, newest first',
    ...listing(listRoleAssignmentsQuery, 'A page of assignments', roleAssignmentSchema),
  }),
  createRoleAssignment: roleWrites.post('/v1/tenants/:tenantId/role-assignments', {
    summary: 'Assign roles to a subject (one active assignment per subject)',
    request: { body: createRoleAssignmentBody },
    responses: { 201: { description: 'The assignment', schema: roleAssignmentSchema } },
    errors: {
      403: 'A platform role cannot be assigned',
      409: 'The subject already has an active assignment',
    },
  }),
  getRoleAssignment: roleReads.get('/v1/tenants/:tenantId/role-assignments/:id', {
    summary: 'Get a role assignment',
    responses: { 200: { description: 'The assignment', schema: roleAssignmentSchema } },
  }),
  updateRoleAssignment: roleWrites.patch('/v1/tenants/:tenantId/role-assignments/:id', {
    summary: "Replace an active assignment's roles",
    request: { body: updateRoleAssignmentBody },
    responses: { 200: { description: 'The updated assignment', schema: roleAssignmentSchema } },
    errors: { 403: 'A platform role cannot be assigned', 409: 'The assignment is revoked' },
  }),
  revokeRoleAssignment: roleWrites.post('/v1/tenants/:tenantId/role-assignments/:id/revoke', {
    summary: 'Revoke a role assignment (not your own active one)',
    responses: { 200: { description: 'The revoked assignment', schema: roleAssignmentSchema } },
    errors: { 409: "Already revoked, or the caller's own active assignment" },
  }),
});
