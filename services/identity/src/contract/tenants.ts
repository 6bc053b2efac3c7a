import { defineRoute, labelText, listQueryShape, pageSchema } from '@mandate/shared';
import { z } from 'zod';
import { PLANS, TENANT_NAME_MAX, TENANT_STATUSES } from './wire';
import { subjectIdSchema, tenantParams, timestamp } from './common';
import { createdApiKeySchema } from './api-keys';

// Tenants: schemas and routes.

export const createTenantBody = z.strictObject({
  name: labelText().trim().min(1).max(TENANT_NAME_MAX),
  plan: z.enum(PLANS).default('beta'),
  admin_subject_id: subjectIdSchema.optional(),
});

export const tenantSchema = z.object({
  id: z.string(),
  name: z.string(),
  plan: z.enum(PLANS),
  status: z.enum(TENANT_STATUSES),
  created_at: timestamp,
});

export const listTenantsQuery = z.strictObject(listQueryShape);

export const createTenantResponse = z.object({ tenant: tenantSchema, api_key: createdApiKeySchema });

export const tenantRoutes = {
  createTenant: defineRoute({
    operationId: 'createTenant',
    summary: 'Create a tenant with an initial API key (platform operator)',
    tags: ['platform'],
    method: 'POST',
    path: '/v1/platform/tenants',
    service: 'identity',
    auth: 'operator',
    request: { body: createTenantBody },
    responses: {
      201: { description: 'The tenant and its initial key (all five scopes)', schema: createTenantResponse },
    },
  }),
  listTenants: defineRoute({
    operationId: 'listTenants',
    summary: 'List the tenants of the platform, newest first (platform operator)',
    tags: ['platform'],
    method: 'GET',
    path: '/v1/platform/tenants',
    service: 'identity',
    auth: 'operator',
    request: { query: listTenantsQuery },
    responses: { 200: { description: 'A page of tenants', schema: pageSchema(tenantSchema) } },
  }),
  getTenant: defineRoute({
    operationId: 'getTenant',
    summary: 'Get a tenant',
    tags: ['tenants'],
    method: 'GET',
    path: '/v1/tenants/:tenantId',
    service: 'identity',
    auth: 'tenant',
    scope: 'tenants:admin',
    permissions: ['tenant:read', 'tenants:admin'],
    request: { params: tenantParams },
    responses: { 200: { description: 'The tenant', schema: tenantSchema } },
  }),
};
