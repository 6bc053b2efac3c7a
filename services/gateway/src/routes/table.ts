/**
 * The public surface in one table: which service owns each route, how callers authenticate, and
 * the scope (API keys) or permission (JWT callers) it needs. Authentication, scope checks, 404/405
 * and the route-security tests are all driven from here, so a route cannot ship without them.
 */
export const API_KEY_SCOPES = [
  'mandates:read',
  'mandates:write',
  'verify',
  'events:read',
  'tenants:admin',
] as const;
export type Scope = (typeof API_KEY_SCOPES)[number];

export type ServiceName = 'mandates' | 'verify' | 'identity' | 'audit' | 'gateway';
export type AuthMode = 'tenant' | 'operator' | 'public';
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RouteRule {
  method: Method;
  /** Always the /v1 form; unversioned paths are aliases. `:name` segments are parameters. */
  path: string;
  service: ServiceName;
  auth: AuthMode;
  /** Scope an API key needs. */
  scope?: Scope;
  /** Alternatives a JWT caller may hold instead (any one suffices); defaults to the scope. */
  permissions?: string[];
  /** Named per-endpoint rate limit bucket (SPEC §6), if any. */
  limit?: 'mandates.create' | 'mandates.lifecycle' | 'apikeys.create' | 'evidence.export' | 'onboarding';
}

export const ROUTES: RouteRule[] = [
  {
    method: 'POST',
    path: '/v1/mandates',
    service: 'mandates',
    auth: 'tenant',
    scope: 'mandates:write',
    limit: 'mandates.create',
  },
  { method: 'GET', path: '/v1/mandates', service: 'mandates', auth: 'tenant', scope: 'mandates:read' },
  { method: 'GET', path: '/v1/mandates/:id', service: 'mandates', auth: 'tenant', scope: 'mandates:read' },
  {
    method: 'POST',
    path: '/v1/mandates/:id/suspend',
    service: 'mandates',
    auth: 'tenant',
    scope: 'mandates:write',
    limit: 'mandates.lifecycle',
  },
  {
    method: 'POST',
    path: '/v1/mandates/:id/reactivate',
    service: 'mandates',
    auth: 'tenant',
    scope: 'mandates:write',
    limit: 'mandates.lifecycle',
  },
  {
    method: 'POST',
    path: '/v1/mandates/:id/revoke',
    service: 'mandates',
    auth: 'tenant',
    scope: 'mandates:write',
    limit: 'mandates.lifecycle',
  },
  { method: 'GET', path: '/v1/.well-known/jwks.json', service: 'mandates', auth: 'public' },
  { method: 'POST', path: '/v1/verify', service: 'verify', auth: 'tenant', scope: 'verify' },
  { method: 'GET', path: '/v1/events', service: 'audit', auth: 'tenant', scope: 'events:read' },
  { method: 'GET', path: '/v1/events/:id', service: 'audit', auth: 'tenant', scope: 'events:read' },
  {
    method: 'GET',
    path: '/v1/mandates/:id/evidence',
    service: 'audit',
    auth: 'tenant',
    scope: 'events:read',
    // An export reads every event of a mandate: its own bucket (SPEC §5), far below the global one.
    limit: 'evidence.export',
  },
  {
    method: 'GET',
    path: '/v1/tenants/:tenantId',
    service: 'identity',
    auth: 'tenant',
    scope: 'tenants:admin',
    permissions: ['tenant:read', 'tenants:admin'],
  },
  {
    method: 'POST',
    path: '/v1/tenants/:tenantId/api-keys',
    service: 'identity',
    auth: 'tenant',
    scope: 'tenants:admin',
    permissions: ['tenants:admin', 'tenant:write'],
    limit: 'apikeys.create',
  },
  {
    method: 'GET',
    path: '/v1/tenants/:tenantId/api-keys',
    service: 'identity',
    auth: 'tenant',
    scope: 'tenants:admin',
    permissions: ['tenants:admin', 'tenant:write', 'tenant:read'],
  },
  {
    method: 'GET',
    path: '/v1/tenants/:tenantId/api-keys/:keyId',
    service: 'identity',
    auth: 'tenant',
    scope: 'tenants:admin',
    permissions: ['tenants:admin', 'tenant:write', 'tenant:read'],
  },
  {
    method: 'POST',
    path: '/v1/tenants/:tenantId/api-keys/:keyId/rotate',
    service: 'identity',
    auth: 'tenant',
    scope: 'tenants:admin',
    permissions: ['tenants:admin', 'tenant:write'],
    // A rotation mints a key too (SPEC §5): one budget with creation.
    limit: 'apikeys.create',
  },
  {
    method: 'POST',
    path: '/v1/tenants/:tenantId/api-keys/:keyId/activate',
    service: 'identity',
    auth: 'tenant',
    scope: 'tenants:admin',
    permissions: ['tenants:admin', 'tenant:write'],
  },
  {
    method: 'POST',
    path: '/v1/tenants/:tenantId/api-keys/:keyId/revoke',
    service: 'identity',
    auth: 'tenant',
    scope: 'tenants:admin',
    permissions: ['tenants:admin', 'tenant:write'],
  },
  {
    method: 'GET',
    path: '/v1/tenants/:tenantId/role-assignments',
    service: 'identity',
    auth: 'tenant',
    scope: 'tenants:admin',
    permissions: ['tenant:read', 'tenant:write'],
  },
  {
    method: 'POST',
    path: '/v1/tenants/:tenantId/role-assignments',
    service: 'identity',
    auth: 'tenant',
    scope: 'tenants:admin',
    permissions: ['tenant:write'],
  },
  {
    method: 'GET',
    path: '/v1/tenants/:tenantId/role-assignments/:id',
    service: 'identity',
    auth: 'tenant',
    scope: 'tenants:admin',
    permissions: ['tenant:read', 'tenant:write'],
  },
  {
    method: 'PATCH',
    path: '/v1/tenants/:tenantId/role-assignments/:id',
    service: 'identity',
    auth: 'tenant',
    scope: 'tenants:admin',
    permissions: ['tenant:write'],
  },
  {
    method: 'POST',
    path: '/v1/tenants/:tenantId/role-assignments/:id/revoke',
    service: 'identity',
    auth: 'tenant',
    scope: 'tenants:admin',
    permissions: ['tenant:write'],
  },
  {
    method: 'GET',
    path: '/v1/tenants/:tenantId/widget-config',
    service: 'identity',
    auth: 'tenant',
    scope: 'tenants:admin',
    permissions: ['tenants:admin', 'tenant:write'],
  },
  {
    method: 'PUT',
    path: '/v1/tenants/:tenantId/widget-config',
    service: 'identity',
    auth: 'tenant',
    scope: 'tenants:admin',
    permissions: ['tenants:admin', 'tenant:write'],
  },
  {
    method: 'POST',
    path: '/v1/onboarding/request',
    service: 'identity',
    auth: 'public',
    limit: 'onboarding',
  },
  { method: 'POST', path: '/v1/platform/tenants', service: 'identity', auth: 'operator' },
  { method: 'GET', path: '/v1/platform/onboarding-requests', service: 'identity', auth: 'operator' },
  {
    method: 'POST',
    path: '/v1/platform/onboarding-requests/:id/approve',
    service: 'identity',
    auth: 'operator',
  },
  {
    method: 'POST',
    path: '/v1/platform/onboarding-requests/:id/reject',
    service: 'identity',
    auth: 'operator',
  },
  { method: 'GET', path: '/v1/openapi.json', service: 'gateway', auth: 'public' },
];
