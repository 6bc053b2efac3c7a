import {
  errorResponse,
  labelText,
  listQueryShape,
  pageSchema,
  type OpenApiContribution,
} from '@mandate/shared';
import { z } from 'zod';
import { API_KEY_NAME_MAX, API_KEY_SCOPES, API_KEY_STATUSES } from '../domain/api-key';
import {
  ONBOARDING_STATUSES,
  ORGANIZATION_NAME_MAX,
  REJECTION_REASON_MAX,
  USE_CASE_MAX,
  isRealLookingEmail,
} from '../domain/onboarding';
import { ROLES, ROLE_ASSIGNMENT_STATUSES, SUBJECT_ID_MAX, SUBJECT_ID_PATTERN } from '../domain/roles';
import { PLANS, TENANT_NAME_MAX, TENANT_STATUSES } from '../domain/tenant';
import {
  COLOR_PATTERN,
  LOCALE_PATTERN,
  MAX_ALLOWED_ORIGINS,
  isHttpsOrigin,
  isHttpsUrl,
  normalizeHttpsOrigin,
  normalizeHttpsUrl,
} from '../domain/widget';

const timestamp = z.iso.datetime();

// ── requests ──────────────────────────────────────────────────────────────────

export const subjectIdSchema = labelText()
  .max(SUBJECT_ID_MAX)
  .regex(SUBJECT_ID_PATTERN, { message: 'must be wallet:<id>, dashboard:<id> or oidc:<provider>:<id>' });

export const createTenantBody = z.strictObject({
  name: labelText().trim().min(1).max(TENANT_NAME_MAX),
  plan: z.enum(PLANS).default('beta'),
  admin_subject_id: subjectIdSchema.optional(),
});

export const scopesSchema = z
  .array(z.enum(API_KEY_SCOPES))
  .min(1)
  .refine((scopes) => new Set(scopes).size === scopes.length, { message: 'must not repeat a scope' });

export const createApiKeyBody = z.strictObject({
  name: labelText().trim().min(1).max(API_KEY_NAME_MAX),
  scopes: scopesSchema,
});

export const listApiKeysQuery = z.strictObject(listQueryShape);

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

export const onboardingRequestBody = z.strictObject({
  organization_name: labelText().trim().min(1).max(ORGANIZATION_NAME_MAX),
  contact_email: z
    .string()
    .trim()
    .min(1)
    .refine(isRealLookingEmail, { message: 'must be a valid email address' }),
  country: z
    .string()
    .regex(/^[A-Z]{2}$/, { message: 'must be an ISO 3166-1 alpha-2 code such as DE' })
    .optional(),
  use_case: z.string().trim().max(USE_CASE_MAX).optional(),
});

export const listOnboardingQuery = z.strictObject({
  ...listQueryShape,
  status: z.enum(ONBOARDING_STATUSES).optional(),
});

export const approveOnboardingBody = z.strictObject({
  plan: z.enum(PLANS).default('beta'),
  name: labelText()
    .trim()
    .min(1)
    .max(TENANT_NAME_MAX)
    .optional()
    .describe('Defaults to the organization name'),
  admin_subject_id: subjectIdSchema.optional(),
});

export const rejectOnboardingBody = z.strictObject({
  reason: z.string().trim().max(REJECTION_REASON_MAX).optional(),
});

export const widgetConfigBody = z.strictObject({
  allowed_origins: z
    .array(
      z
        .string()
        .max(300)
        .refine(isHttpsOrigin, {
          message: 'must be an https origin such as https://shop.example.com (no path, no wildcard)',
        })
        // Stored as the browser's Origin header spells it, so comparisons are exact.
        .overwrite((origin) => normalizeHttpsOrigin(origin) ?? origin),
    )
    .max(MAX_ALLOWED_ORIGINS),
  theme: z
    .strictObject({
      primary_color: z
        .string()
        .regex(COLOR_PATTERN, { message: 'must be a hex colour such as #1a2b3c' })
        .optional(),
      logo_url: z
        .string()
        .max(2048)
        .refine(isHttpsUrl, { message: 'must be an https URL without credentials' })
        // Stored as the parser's href: a quote or space can never break out of an attribute.
        .overwrite((url) => normalizeHttpsUrl(url) ?? url)
        .optional(),
    })
    .default({}),
  locale: z
    .string()
    .regex(LOCALE_PATTERN, { message: 'must be a BCP 47 tag such as en or de-CH' })
    .nullable()
    .default(null),
});

export const tenantParams = z.object({ tenantId: z.string() });
export const roleAssignmentParams = z.object({ tenantId: z.string(), id: z.string() });
export const onboardingParams = z.object({ id: z.string() });
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

export const onboardingAcceptedSchema = z.object({
  id: z.string(),
  status: z.literal('PENDING'),
  created_at: timestamp,
});

export const onboardingRequestSchema = z.object({
  id: z.string(),
  organization_name: z.string(),
  contact_email: z.string(),
  country: z.string().nullable(),
  use_case: z.string().nullable(),
  status: z.enum(ONBOARDING_STATUSES),
  created_at: timestamp,
  decided_at: timestamp.nullable(),
  tenant_id: z.string().nullable(),
  rejection_reason: z.string().nullable(),
});

export const approvedOnboardingSchema = z.object({
  onboarding_request: onboardingRequestSchema,
  tenant: tenantSchema,
  api_key: createdApiKeySchema,
  role_assignment: roleAssignmentSchema.nullable(),
});

export const widgetConfigSchema = z.object({
  allowed_origins: z.array(z.string()),
  theme: z.object({ primary_color: z.string().optional(), logo_url: z.string().optional() }),
  locale: z.string().nullable(),
  updated_at: timestamp.nullable().describe('null until the configuration is first saved'),
});

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
  registerIdentityExtras(registry);
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
    description:
      'A key has at most one staging successor. The staging key is revoked if not activated within STAGING_KEY_TTL_HOURS (default 168). Counts against the key-creation rate limit.',
    tags: ['api-keys'],
    request: { params: apiKeyParams },
    responses: {
      201: { description: 'The new staging key with its secret', ...json(rotatedApiKeySchema) },
      ...common,
      404: errorResponse('Not found'),
      409: errorResponse('The key is not active, or already has a staging successor'),
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

function registerIdentityExtras(registry: Parameters<OpenApiContribution>[0]): void {
  const notFound = { 404: errorResponse('Not found') };
  registry.registerPath({
    method: 'get',
    path: '/v1/tenants/{tenantId}/role-assignments',
    summary: 'List role assignments, newest first',
    tags: ['roles'],
    request: { params: tenantParams, query: listRoleAssignmentsQuery },
    responses: {
      200: { description: 'A page of assignments', ...json(pageSchema(roleAssignmentSchema)) },
      ...common,
      ...notFound,
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/v1/tenants/{tenantId}/role-assignments',
    summary: 'Assign roles to a subject (one active assignment per subject)',
    tags: ['roles'],
    request: { params: tenantParams, body: json(createRoleAssignmentBody) },
    responses: {
      201: { description: 'The assignment', ...json(roleAssignmentSchema) },
      ...common,
      ...notFound,
      409: errorResponse('The subject already has an active assignment'),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/tenants/{tenantId}/role-assignments/{id}',
    summary: 'Get a role assignment',
    tags: ['roles'],
    request: { params: roleAssignmentParams },
    responses: {
      200: { description: 'The assignment', ...json(roleAssignmentSchema) },
      ...common,
      ...notFound,
    },
  });
  registry.registerPath({
    method: 'patch',
    path: '/v1/tenants/{tenantId}/role-assignments/{id}',
    summary: "Replace an active assignment's roles",
    tags: ['roles'],
    request: { params: roleAssignmentParams, body: json(updateRoleAssignmentBody) },
    responses: {
      200: { description: 'The updated assignment', ...json(roleAssignmentSchema) },
      ...common,
      ...notFound,
      409: errorResponse('The assignment is revoked'),
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/v1/tenants/{tenantId}/role-assignments/{id}/revoke',
    summary: 'Revoke a role assignment (not your own active one)',
    tags: ['roles'],
    request: { params: roleAssignmentParams },
    responses: {
      200: { description: 'The revoked assignment', ...json(roleAssignmentSchema) },
      ...common,
      ...notFound,
      409: errorResponse("Already revoked, or the caller's own active assignment"),
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/v1/onboarding/request',
    summary: 'Ask for a tenant (no authentication; limited per client IP)',
    tags: ['onboarding'],
    request: { body: json(onboardingRequestBody) },
    responses: {
      202: { description: 'Accepted for review by the platform operator', ...json(onboardingAcceptedSchema) },
      400: common[400],
      429: errorResponse('Rate limit exceeded'),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/platform/onboarding-requests',
    summary: 'List onboarding requests, newest first (platform operator)',
    tags: ['platform'],
    request: { query: listOnboardingQuery },
    responses: {
      200: { description: 'A page of requests', ...json(pageSchema(onboardingRequestSchema)) },
      ...common,
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/v1/platform/onboarding-requests/{id}/approve',
    summary: 'Approve a pending request: creates the tenant, its initial key and optionally its tenant_admin',
    tags: ['platform'],
    request: { params: onboardingParams, body: json(approveOnboardingBody) },
    responses: {
      201: {
        description: 'The decided request, the tenant and its initial key',
        ...json(approvedOnboardingSchema),
      },
      ...common,
      ...notFound,
      409: errorResponse('The request was already decided'),
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/v1/platform/onboarding-requests/{id}/reject',
    summary: 'Reject a pending request',
    tags: ['platform'],
    request: { params: onboardingParams, body: json(rejectOnboardingBody) },
    responses: {
      200: { description: 'The decided request', ...json(onboardingRequestSchema) },
      ...common,
      ...notFound,
      409: errorResponse('The request was already decided'),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/tenants/{tenantId}/widget-config',
    summary: "The tenant's widget configuration (defaults until saved)",
    tags: ['widget'],
    request: { params: tenantParams },
    responses: {
      200: { description: 'The configuration', ...json(widgetConfigSchema) },
      ...common,
      ...notFound,
    },
  });
  registry.registerPath({
    method: 'put',
    path: '/v1/tenants/{tenantId}/widget-config',
    summary: "Replace the tenant's widget configuration",
    tags: ['widget'],
    request: { params: tenantParams, body: json(widgetConfigBody) },
    responses: {
      200: { description: 'The saved configuration', ...json(widgetConfigSchema) },
      ...common,
      ...notFound,
    },
  });
}
