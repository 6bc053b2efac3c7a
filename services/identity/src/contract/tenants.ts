import { labelText } from '@mandate/shared/core';
import { defineRoutes, listing, listQueryShape, routeGroup } from '@mandate/shared/contract';
import { z } from 'zod';
import { PLANS, TENANT_NAME_MAX, TENANT_STATUSES } from './wire';
import { platformRoutes, subjectIdSchema, timestamp, TENANT_ADMIN_ROUTE } from './common';
import { createdApiKeySchema } from './api-keys';

// Tenants: schemas and routes.

export const createTenantBody = z.strictObject({
  name: labelText().trim().min(1).max(TENANT_NAME_MAX),
  plan: z.enum(PLANS).default('beta'),
  admin_subject_id: subjectIdSchema.optional(),
});

export const tenantSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    plan: z.enum(PLANS),
    status: z.enum(TENANT_STATUSES),
    created_at: timestamp,
  })
  .meta({ id: 'Tenant' });

export const listTenantsQuery = z.strictObject(listQueryShape);

export const createTenantResponse = z
  .object({ tenant: tenantSchema, api_key: createdApiKeySchema })
  .meta({ id: 'CreatedTenant' });

/** The tenant itself: a JWT caller reads it with tenant:read (or the platform-wide tenants:admin). */
const tenantRoute = routeGroup({ ...TENANT_ADMIN_ROUTE, tags: ['tenants'] });

export const tenantRoutes = defineRoutes({
  createTenant: platformRoutes.post('/v1/platform/tenants', {
    summary: 'Create a tenant with an initial API key (platform operator)',
    request: { body: createTenantBody },
    responses: {
      201: { description: 'The tenant and its initial key (all five scopes)', schema: createTenantResponse },
    },
    secrets: ['api_key'],
  }),
  listTenants: platformRoutes.get('/v1/platform/tenants', {
    summary: 'List the tenants of the platform, newest first (platform operator)',
    ...listing(listTenantsQuery, 'A page of tenants', tenantSchema),
  }),
  getTenant: tenantRoute.get('/v1/tenants/:tenantId', {
    summary: 'Get a tenant',
    permissions: ['tenant:read', 'tenants:admin'],
    responses: { 200: { description: 'The tenant', schema: tenantSchema } },
  }),
});
