import { z } from 'zod';
import { defineRoute, type RouteContract } from '@mandate/shared';
import { contract as auditContract } from '@mandate/audit';
import { contract as identityContract } from '@mandate/identity';
import { contract as mandatesContract } from '@mandate/mandates';
import { contract as verifyContract } from '@mandate/verify';
import { meSchema } from '../dashboard/me';
import { usageSchema } from '../limits/usage';

/**
 * The public surface in one table, made of the contracts each service exports as its package's
 * entry (never its internals): which service owns each route, how callers authenticate, the scope
 * (API keys) or permission (JWT callers) it needs and its limit bucket. Authentication, scope
 * checks, 404/405, the route-security tests and `/v1/openapi.json` are all driven from here, so a
 * route cannot ship without them — and adding one touches its service's contract, not the gateway.
 */
export {
  API_KEY_SCOPES,
  type AuthMode,
  type Method,
  type RouteRule,
  type Scope,
  type ServiceName,
} from '@mandate/shared';

/** The gateway's own route: the document itself. */
export const gatewayContract = [
  defineRoute({
    operationId: 'getOpenApiDocument',
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
  }),
  defineRoute({
    operationId: 'getMe',
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
  }),
  defineRoute({
    operationId: 'getUsage',
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
  }),
];

export const CONTRACTS: readonly RouteContract[] = [
  ...mandatesContract,
  ...verifyContract,
  ...auditContract,
  ...identityContract,
  ...gatewayContract,
];

export const ROUTES: RouteContract[] = [...CONTRACTS];
