import { z } from 'zod';
import { PLANS } from '@mandate/identity';
import { defineRoutes } from '@mandate/shared/contract';
import { ENDPOINT_LIMITS, type EndpointLimit } from './limits/plans';

/**
 * The gateway's own routes (answered by the gateway itself, not forwarded): their schemas and
 * contracts, for the route table and the document. Imports no file that imports the table.
 */

/** GET /v1/me: the authenticated caller as the gateway established it (the dashboard's navigation). */
export const meSchema = z
  .object({
    tenant_id: z.string(),
    kind: z.enum(['api_key', 'user']),
    /** The JWT caller's canonical subject (`dashboard:…`, `oidc:<provider>:…`, `wallet:…`). */
    subject_id: z.string().optional(),
    /** The API key's id. */
    key_id: z.string().optional(),
    /** An API key's scopes, or the permissions of the subject's active role assignment. */
    permissions: z.array(z.string()),
    plan: z.enum(PLANS).optional(),
  })
  .meta({ id: 'Me' });
const bucketSchema = z.object({ rate: z.number(), burst: z.number() });

/** GET /v1/usage: the caller's plan, its limits and this month's quota use per API key / JWT subject. */
export const usageSchema = z
  .object({
    tenant_id: z.string(),
    plan: z.enum(PLANS),
    limits: z.object({
      monthly_quota: z.number().describe('Requests per API key (or JWT subject) per calendar month, UTC'),
      global: bucketSchema.describe('Requests per second (rate) and at once (burst), per key'),
      endpoints: z.object(
        Object.fromEntries(ENDPOINT_LIMITS.map((l) => [l, bucketSchema])) as Record<
          EndpointLimit,
          typeof bucketSchema
        >,
      ),
    }),
    period: z.object({
      month: z.string().describe('YYYY-MM, UTC'),
      start: z.string().describe('The first instant of the month, UTC'),
      reset_at: z.string().describe('When every counter starts again: the first instant of the next month'),
      days_to_reset: z.number().int().describe('Whole days until reset_at, rounded up'),
    }),
    usage: z
      .array(
        z.object({
          key_id: z.string().optional(),
          subject_id: z.string().optional(),
          used: z.number().int(),
          remaining: z.number().int(),
        }),
      )
      .describe(
        'Callers of the tenant with requests counted this month, most used first; an unused key is absent',
      ),
    daily: z
      .array(
        z.object({
          date: z.string().describe('YYYY-MM-DD, UTC'),
          used: z.number().int().describe('Requests of every caller of the tenant counted that day'),
        }),
      )
      .describe('Every day of this month from the 1st to today (UTC), oldest first; a day without use is 0'),
  })
  .meta({ id: 'Usage' });

/** The gateway's own routes: the document itself, the caller, the tenant's usage. */
const gatewayRoutes = defineRoutes({
  getOpenApiDocument: {
    summary: 'This OpenAPI document',
    tags: ['gateway'],
    method: 'GET',
    path: '/v1/openapi.json',
    service: 'gateway',
    auth: 'public',
    responses: {
      200: {
        description: 'The OpenAPI 3.1 document of the public API',
        schema: z.looseObject({ openapi: z.string(), info: z.looseObject({}), paths: z.looseObject({}) }),
      },
    },
  },
  getMe: {
    summary: 'Who the caller is: tenant, API key or subject, and its permissions',
    description:
      'Any valid tenant credential (no scope needed). A JWT caller sends X-Tenant-Id; its permissions are those of its active role assignment in that tenant.',
    tags: ['gateway'],
    method: 'GET',
    path: '/v1/me',
    service: 'gateway',
    // Any caller of a tenant (no scope): who it is and what it may do, answered by the gateway itself.
    auth: 'tenant',
    responses: { 200: { description: 'The caller', schema: meSchema } },
    errors: { 404: 'A JWT subject without an assignment in the tenant' },
  },
  getUsage: {
    summary: "The tenant's plan, its limits and this month's quota use per API key and per day",
    description:
      "Counted by the gateway itself (the monthly quota of every API key and JWT subject, and the tenant's requests per UTC day of this month). The tenant is the credential's; a JWT caller sends X-Tenant-Id.",
    tags: ['gateway'],
    method: 'GET',
    path: '/v1/usage',
    service: 'gateway',
    auth: 'tenant',
    scope: 'tenants:admin',
    permissions: ['tenants:admin', 'tenant:write', 'tenant:read'],
    responses: {
      200: { description: 'Plan, limits and use this month (per caller and per day)', schema: usageSchema },
    },
  },
});
export const gatewayContract = Object.values(gatewayRoutes);
