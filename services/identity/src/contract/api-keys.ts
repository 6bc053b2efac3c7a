import { labelText } from '@mandate/shared/core';
import { defineRoutes, listing, listQueryShape } from '@mandate/shared/contract';
import { z } from 'zod';
import { API_KEY_NAME_MAX, API_KEY_SCOPES, API_KEY_STATUSES, MAX_ROTATION_GRACE_SECONDS } from './wire';
import { tenantConfigRoutes, timestamp } from './common';

// API keys: schemas and routes.

export const scopesSchema = z
  .array(z.enum(API_KEY_SCOPES))
  .min(1)
  .refine((scopes) => new Set(scopes).size === scopes.length, { message: 'must not repeat a scope' });

export const createApiKeyBody = z.strictObject({
  name: labelText().trim().min(1).max(API_KEY_NAME_MAX),
  scopes: scopesSchema,
});

/** docs/API.md#api-key-rotation-grace: how long the replaced key keeps working; absent = the deployment's default (24 h). */
export const activateApiKeyBody = z.strictObject({
  grace_seconds: z
    .number()
    .int()
    .min(0)
    .max(MAX_ROTATION_GRACE_SECONDS)
    .optional()
    .describe(
      'How long the replaced key keeps working, in seconds (0: revoked at once; at most 604800, 7 days). Default KEY_ROTATION_GRACE_SECONDS, 86400 (24 h).',
    ),
});

export const listApiKeysQuery = z.strictObject(listQueryShape);

/** The creation response: the only place the secret ever appears. */
export const createdApiKeySchema = z
  .object({
    key_id: z.string(),
    api_key: z.string().describe('The secret. Shown once; store it now.'),
    name: z.string(),
    scopes: z.array(z.enum(API_KEY_SCOPES)),
    status: z.enum(API_KEY_STATUSES),
    created_at: timestamp,
  })
  .meta({ id: 'CreatedApiKey' });

export const rotatedApiKeySchema = createdApiKeySchema
  .extend({
    replaces_key_id: z.string().describe('The key this one replaces; activating this key revokes it.'),
  })
  .meta({ id: 'RotatedApiKey' });

export const apiKeySchema = z
  .object({
    key_id: z.string(),
    name: z.string(),
    scopes: z.array(z.enum(API_KEY_SCOPES)),
    status: z.enum(API_KEY_STATUSES),
    created_at: timestamp,
    last_used_at: timestamp.nullable(),
    replaces_key_id: z.string().nullable(),
    replaced_by_key_id: z
      .string()
      .nullable()
      .describe("The key that replaced this one (its successor's activation): the link back."),
    grace_ends_at: timestamp
      .nullable()
      .describe(
        'A replaced key in its rotation grace period: it keeps working until then, and is revoked at that moment.',
      ),
  })
  .meta({ id: 'ApiKey' });

const keys = tenantConfigRoutes('api-keys');

export const apiKeyRoutes = defineRoutes({
  createApiKey: keys.writes.post('/v1/tenants/:tenantId/api-keys', {
    summary: 'Create an API key',
    limit: 'apikeys.create',
    request: { body: createApiKeyBody },
    responses: { 201: { description: 'The key with its secret', schema: createdApiKeySchema } },
    secrets: ['api_key'],
  }),
  listApiKeys: keys.reads.get('/v1/tenants/:tenantId/api-keys', {
    summary: 'List API keys, newest first',
    ...listing(listApiKeysQuery, 'A page of keys', apiKeySchema),
  }),
  getApiKey: keys.reads.get('/v1/tenants/:tenantId/api-keys/:keyId', {
    summary: 'Get an API key',
    responses: { 200: { description: 'The key', schema: apiKeySchema } },
  }),
  rotateApiKey: keys.writes.post('/v1/tenants/:tenantId/api-keys/:keyId/rotate', {
    summary: 'Rotate an active key: issues a staging key (usable at once) with the same name and scopes',
    description:
      'A key has at most one staging successor. The staging key is revoked if not activated within STAGING_KEY_TTL_HOURS (default 168). Counts against the key-creation rate limit.',
    limit: 'apikeys.create',
    responses: { 201: { description: 'The new staging key with its secret', schema: rotatedApiKeySchema } },
    secrets: ['api_key'],
    errors: { 409: 'The key is not active, or already has a staging successor' },
  }),
  activateApiKey: keys.writes.post('/v1/tenants/:tenantId/api-keys/:keyId/activate', {
    summary: 'Activate a staging key; the key it replaces is revoked, at once or after a grace period',
    description:
      'With grace_seconds > 0 (default KEY_ROTATION_GRACE_SECONDS, 24 h) the replaced key keeps working until its grace_ends_at, then is revoked; 0 revokes it at once. Both keys are linked (replaces_key_id, replaced_by_key_id).',
    request: { body: activateApiKeyBody, bodyRequired: false },
    responses: { 200: { description: 'The activated key', schema: apiKeySchema } },
    errors: { 409: 'The key is not staging' },
  }),
  revokeApiKey: keys.writes.post('/v1/tenants/:tenantId/api-keys/:keyId/revoke', {
    summary: 'Revoke a key',
    responses: { 200: { description: 'The revoked key', schema: apiKeySchema } },
    errors: { 409: 'The key is already revoked' },
  }),
});
