import { errorResponse, listQueryShape, pageSchema, type OpenApiContribution } from '@mandate/shared';
import { z } from 'zod';
import { API_KEY_NAME_MAX, API_KEY_SCOPES, API_KEY_STATUSES } from '../domain/api-key';
import { SUBJECT_ID_MAX, SUBJECT_ID_PATTERN } from '../domain/roles';
import { PLANS, TENANT_NAME_MAX, TENANT_STATUSES } from '../domain/tenant';

const timestamp = z.iso.datetime();

// ── requests ──────────────────────────────────────────────────────────────────

export const subjectIdSchema = z
  .string()
  .max(SUBJECT_ID_MAX)
  .regex(SUBJECT_ID_PATTERN, { message: 'must be wallet:<id>, dashboard:<id> or oidc:<provider>:<id>' });

export const createTenantBody = z.strictObject({
  name: z.string().trim().min(1).max(TENANT_NAME_MAX),
  plan: z.enum(PLANS).default('beta'),
  admin_subject_id: subjectIdSchema.optional(),
});

export const scopesSchema = z
  .array(z.enum(API_KEY_SCOPES))
  .min(1)
  .refine((scopes) => new Set(scopes).size === scopes.length, { message: 'must not repeat a scope' });

export const createApiKeyBody = z.strictObject({
  name: z.string().trim().min(1).max(API_KEY_NAME_MAX),
  scopes: scopesSchema,
});

export const listApiKeysQuery = z.strictObject(listQueryShape);

export const tenantParams = z.object({ tenantId: z.string() });
export const apiKeyParams = z.object({ tenantId: z.string(), keyId: z.string() });

// ── responses ─────────────────────────────────────────────────────────────────

export const tenantSchema = z.object({
  id: z.string(),
  name: z.string(),
  plan: z.enum(PLANS),
  status: z.enum(TENANT_STATUSES),
  created_at: timestamp,
});

/** The creation response: the only place the secret ever appears. */
export const createdApiKeySchema = z.object({
  key_id: z.string(),
  api_key: z.string().describe('The secret. Shown once; store it now.'),
  name: z.string(),
  scopes: z.array(z.enum(API_KEY_SCOPES)),
  status: z.enum(API_KEY_STATUSES),
  created_at: timestamp,
});

export const rotatedApiKeySchema = createdApiKeySchema.extend({
  replaces_key_id: z.string().describe('The key this one replaces; activating this key revokes it.'),
});

export const apiKeySchema = z.object({
  key_id: z.string(),
  name: z.string(),
  scopes: z.array(z.enum(API_KEY_SCOPES)),
  status: z.enum(API_KEY_STATUSES),
  created_at: timestamp,
  last_used_at: timestamp.nullable(),
  replaces_key_id: z.string().nullable(),
});

export const createTenantResponse = z.object({ tenant: tenantSchema, api_key: createdApiKeySchema });

// ── internal (not in the public document) ────────────────────────────────────

export const resolveKeyBody = z.strictObject({
  api_key: z.string().max(200),
  tenant_id: z.string().max(200).optional(),
});

export const resolveSubjectBody = z.strictObject({
  tenant_id: z.string().max(200),
  subject_id: z.string().max(SUBJECT_ID_MAX),
});

// ── OpenAPI ───────────────────────────────────────────────────────────────────

const json = <S extends z.ZodType>(schema: S) => ({ content: { 'application/json': { schema } } });
const common = {
  400: errorResponse('Invalid request; the message names the field'),
  401: errorResponse('Missing or invalid credentials'),
  403: errorResponse('The credential lacks the required scope or permission'),
};

export const openApi: OpenApiContribution = (registry) => {
  registry.registerPath({
    method: 'post',
    path: '/v1/platform/tenants',
    summary: 'Create a tenant with an initial API key (platform operator)',
    tags: ['platform'],
    request: { body: json(createTenantBody) },
    responses: {
      201: { description: 'The tenant and its initial key (all five scopes)', ...json(createTenantResponse) },
      ...common,
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/tenants/{tenantId}',
    summary: 'Get a tenant',
    tags: ['tenants'],
    request: { params: tenantParams },
    responses: {
      200: { description: 'The tenant', ...json(tenantSchema) },
      ...common,
      404: errorResponse('Not found'),
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/v1/tenants/{tenantId}/api-keys',
    summary: 'Create an API key',
    tags: ['api-keys'],
    request: { params: tenantParams, body: json(createApiKeyBody) },
    responses: {
      201: { description: 'The key with its secret', ...json(createdApiKeySchema) },
      ...common,
      404: errorResponse('Not found'),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/tenants/{tenantId}/api-keys',
    summary: 'List API keys, newest first',
    tags: ['api-keys'],
    request: { params: tenantParams, query: listApiKeysQuery },
    responses: {
      200: { description: 'A page of keys', ...json(pageSchema(apiKeySchema)) },
      ...common,
      404: errorResponse('Not found'),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/tenants/{tenantId}/api-keys/{keyId}',
    summary: 'Get an API key',
    tags: ['api-keys'],
    request: { params: apiKeyParams },
    responses: {
      200: { description: 'The key', ...json(apiKeySchema) },
      ...common,
      404: errorResponse('Not found'),
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/v1/tenants/{tenantId}/api-keys/{keyId}/rotate',
    summary: 'Rotate an active key: issues a staging key (usable at once) with the same name and scopes',
    tags: ['api-keys'],
    request: { params: apiKeyParams },
    responses: {
      201: { description: 'The new staging key with its secret', ...json(rotatedApiKeySchema) },
      ...common,
      404: errorResponse('Not found'),
      409: errorResponse('The key is not active'),
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/v1/tenants/{tenantId}/api-keys/{keyId}/activate',
    summary: 'Activate a staging key; the key it replaces is revoked',
    tags: ['api-keys'],
    request: { params: apiKeyParams },
    responses: {
      200: { description: 'The activated key', ...json(apiKeySchema) },
      ...common,
      404: errorResponse('Not found'),
      409: errorResponse('The key is not staging'),
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/v1/tenants/{tenantId}/api-keys/{keyId}/revoke',
    summary: 'Revoke a key',
    tags: ['api-keys'],
    request: { params: apiKeyParams },
    responses: {
      200: { description: 'The revoked key', ...json(apiKeySchema) },
      ...common,
      404: errorResponse('Not found'),
      409: errorResponse('The key is already revoked'),
    },
  });
};
