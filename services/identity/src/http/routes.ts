import { callerOf, decodeCursor, parseOrThrow, route, tenantOf } from '@mandate/shared';
import { Router, type Request } from 'express';
import type { Deps } from '../app';
import type { ApiKey } from '../domain/api-key';
import { OperatorRequired, TenantNotFound } from '../domain/errors';
import type { Identity, IssuedKey } from '../domain/identity';
import type { OnboardingRequest } from '../domain/onboarding';
import type { RoleAssignment } from '../domain/roles';
import type { Tenant } from '../domain/tenant';
import type { WidgetConfig } from '../domain/widget';
import {
  approveOnboardingBody,
  createApiKeyBody,
  createRoleAssignmentBody,
  createTenantBody,
  listApiKeysQuery,
  listOnboardingQuery,
  listRoleAssignmentsQuery,
  onboardingRequestBody,
  rejectOnboardingBody,
  resolveKeyBody,
  resolveSubjectBody,
  updateRoleAssignmentBody,
  widgetConfigBody,
} from './schemas';

// ── views: the one place a stored object becomes a response body ────────────

export const tenantView = (t: Tenant) => ({
  id: t.id,
  name: t.name,
  plan: t.plan,
  status: t.status,
  created_at: t.created_at,
});

export const apiKeyView = (k: ApiKey) => ({
  key_id: k.key_id,
  name: k.name,
  scopes: k.scopes,
  status: k.status,
  created_at: k.created_at,
  last_used_at: k.last_used_at,
  replaces_key_id: k.replaces_key_id,
});

/** SPEC §5's creation shape; the secret appears here and nowhere else. */
export const createdApiKeyView = ({ key, secret }: IssuedKey) => ({
  key_id: key.key_id,
  api_key: secret,
  name: key.name,
  scopes: key.scopes,
  status: key.status,
  created_at: key.created_at,
});

export const roleAssignmentView = (a: RoleAssignment) => ({
  id: a.id,
  tenant_id: a.tenant_id,
  subject_id: a.subject_id,
  roles: a.roles,
  permissions: a.permissions,
  status: a.status,
  created_at: a.created_at,
  updated_at: a.updated_at,
});

export const onboardingView = (r: OnboardingRequest) => ({
  id: r.id,
  organization_name: r.organization_name,
  contact_email: r.contact_email,
  country: r.country,
  use_case: r.use_case,
  status: r.status,
  created_at: r.created_at,
  decided_at: r.decided_at,
  tenant_id: r.tenant_id,
  rejection_reason: r.rejection_reason,
});

export const widgetConfigView = (w: WidgetConfig) => ({
  allowed_origins: w.allowed_origins,
  theme: w.theme,
  locale: w.locale,
  updated_at: w.updated_at,
});

// ── helpers ──────────────────────────────────────────────────────────────────

/**
 * The use cases on behalf of this request's caller: each write stores its events with it (the
 * outbox) and hands them to the relay, so a broker outage never loses one nor fails the answer.
 */
function as(identity: Identity, req: Request): Identity {
  return identity.as(callerOf(req));
}

/** The path's tenant must be the caller's: another tenant is indistinguishable from a missing one. */
function pathTenant(req: Request): string {
  const tenantId = tenantOf(req);
  if (req.params.tenantId !== tenantId) throw new TenantNotFound();
  return tenantId;
}

/** The platform surface is the operator's alone, whatever the gateway let through. */
function requireOperator(req: Request): void {
  if (callerOf(req).actor.type !== 'operator') throw new OperatorRequired();
}

function param(req: Request, name: string): string {
  return String(req.params[name]);
}

// ── public routes (/v1) ──────────────────────────────────────────────────────

export function publicRoutes(deps: Deps, identity: Identity): Router {
  const r = Router();

  route(r, '/v1/platform/tenants', {
    post: async (req, res) => {
      requireOperator(req);
      const body = parseOrThrow(createTenantBody, req.body);
      const { value } = await as(identity, req).createTenant({
        name: body.name,
        plan: body.plan,
        adminSubjectId: body.admin_subject_id,
      });
      res.status(201).json({ tenant: tenantView(value.tenant), api_key: createdApiKeyView(value.issued) });
    },
  });

  route(r, '/v1/tenants/:tenantId', {
    get: async (req, res) => {
      res.json(tenantView(await identity.getTenant(pathTenant(req))));
    },
  });

  route(r, '/v1/tenants/:tenantId/api-keys', {
    post: async (req, res) => {
      const tenantId = pathTenant(req);
      const body = parseOrThrow(createApiKeyBody, req.body);
      const { value } = await as(identity, req).createApiKey(tenantId, body);
      res.status(201).json(createdApiKeyView(value));
    },
    get: async (req, res) => {
      const tenantId = pathTenant(req);
      const query = parseOrThrow(listApiKeysQuery, req.query, 'query');
      const page = await identity.listApiKeys(tenantId, {
        limit: query.limit,
        after: decodeCursor(query.cursor),
      });
      res.json({ ...page, data: page.data.map(apiKeyView) });
    },
  });

  route(r, '/v1/tenants/:tenantId/api-keys/:keyId', {
    get: async (req, res) => {
      res.json(apiKeyView(await identity.getApiKey(pathTenant(req), param(req, 'keyId'))));
    },
  });

  route(r, '/v1/tenants/:tenantId/api-keys/:keyId/rotate', {
    post: async (req, res) => {
      const { value } = await as(identity, req).rotateApiKey(pathTenant(req), param(req, 'keyId'));
      res.status(201).json({ ...createdApiKeyView(value), replaces_key_id: value.key.replaces_key_id });
    },
  });

  route(r, '/v1/tenants/:tenantId/api-keys/:keyId/activate', {
    post: async (req, res) => {
      const { value } = await as(identity, req).activateApiKey(pathTenant(req), param(req, 'keyId'));
      res.json(apiKeyView(value));
    },
  });

  route(r, '/v1/tenants/:tenantId/api-keys/:keyId/revoke', {
    post: async (req, res) => {
      const { value } = await as(identity, req).revokeApiKey(pathTenant(req), param(req, 'keyId'));
      res.json(apiKeyView(value));
    },
  });

  route(r, '/v1/tenants/:tenantId/role-assignments', {
    post: async (req, res) => {
      const tenantId = pathTenant(req);
      const body = parseOrThrow(createRoleAssignmentBody, req.body);
      const { value } = await as(identity, req).assignRoles(tenantId, {
        subjectId: body.subject_id,
        roles: body.roles,
      });
      res.status(201).json(roleAssignmentView(value));
    },
    get: async (req, res) => {
      const tenantId = pathTenant(req);
      const query = parseOrThrow(listRoleAssignmentsQuery, req.query, 'query');
      const page = await identity.listRoleAssignments(tenantId, {
        limit: query.limit,
        after: decodeCursor(query.cursor),
        subjectId: query.subject_id,
        status: query.status,
      });
      res.json({ ...page, data: page.data.map(roleAssignmentView) });
    },
  });

  route(r, '/v1/tenants/:tenantId/role-assignments/:id', {
    get: async (req, res) => {
      res.json(roleAssignmentView(await identity.getRoleAssignment(pathTenant(req), param(req, 'id'))));
    },
    patch: async (req, res) => {
      const tenantId = pathTenant(req);
      const body = parseOrThrow(updateRoleAssignmentBody, req.body);
      const { value } = await as(identity, req).updateRoleAssignment(
        tenantId,
        param(req, 'id'),
        { roles: body.roles, subjectId: body.subject_id },
        callerOf(req).actor.subject_id,
      );
      res.json(roleAssignmentView(value));
    },
  });

  route(r, '/v1/tenants/:tenantId/role-assignments/:id/revoke', {
    post: async (req, res) => {
      const tenantId = pathTenant(req);
      const { value } = await as(identity, req).revokeRoleAssignment(
        tenantId,
        param(req, 'id'),
        callerOf(req).actor.subject_id,
      );
      res.json(roleAssignmentView(value));
    },
  });

  route(r, '/v1/tenants/:tenantId/widget-config', {
    get: async (req, res) => {
      res.json(widgetConfigView(await identity.getWidgetConfig(pathTenant(req))));
    },
    put: async (req, res) => {
      const tenantId = pathTenant(req);
      const body = parseOrThrow(widgetConfigBody, req.body);
      const { value } = await as(identity, req).putWidgetConfig(tenantId, body);
      res.json(widgetConfigView(value));
    },
  });

  /** Public: the gateway forwards it without a tenant (actor system), limited per client IP. */
  route(r, '/v1/onboarding/request', {
    post: async (req, res) => {
      const body = parseOrThrow(onboardingRequestBody, req.body);
      const { value } = await as(identity, req).requestOnboarding({
        organizationName: body.organization_name,
        contactEmail: body.contact_email,
        country: body.country,
        useCase: body.use_case,
      });
      res.status(202).json({ id: value.id, status: value.status, created_at: value.created_at });
    },
  });

  route(r, '/v1/platform/onboarding-requests', {
    get: async (req, res) => {
      requireOperator(req);
      const query = parseOrThrow(listOnboardingQuery, req.query, 'query');
      const page = await identity.listOnboardingRequests({
        limit: query.limit,
        after: decodeCursor(query.cursor),
        status: query.status,
      });
      res.json({ ...page, data: page.data.map(onboardingView) });
    },
  });

  route(r, '/v1/platform/onboarding-requests/:id/approve', {
    post: async (req, res) => {
      requireOperator(req);
      const body = parseOrThrow(approveOnboardingBody, req.body ?? {});
      const { value } = await as(identity, req).approveOnboarding(param(req, 'id'), {
        plan: body.plan,
        name: body.name,
        adminSubjectId: body.admin_subject_id,
      });
      res.status(201).json({
        onboarding_request: onboardingView(value.request),
        tenant: tenantView(value.tenant),
        api_key: createdApiKeyView(value.issued),
        role_assignment: value.assignment ? roleAssignmentView(value.assignment) : null,
      });
    },
  });

  route(r, '/v1/platform/onboarding-requests/:id/reject', {
    post: async (req, res) => {
      requireOperator(req);
      const body = parseOrThrow(rejectOnboardingBody, req.body ?? {});
      const { value } = await as(identity, req).rejectOnboarding(param(req, 'id'), { reason: body.reason });
      res.json(onboardingView(value));
    },
  });

  return r;
}

// ── internal routes (/internal/v1), for the gateway ──────────────────────────

export function internalRoutes(deps: Deps, identity: Identity): Router {
  const r = Router();

  /** API-key authentication: 200 for an active or staging key, 404 for anything else. */
  route(r, '/internal/v1/keys/resolve', {
    post: async (req, res) => {
      const body = parseOrThrow(resolveKeyBody, req.body);
      const { key, plan } = await identity.resolveApiKey(body.api_key, body.tenant_id);
      // last_used_at is bookkeeping: it must neither slow down nor fail authentication.
      identity.recordKeyUse(key.tenant_id, key.key_id).catch((err) => {
        deps.logger.warn({ err, requestId: req.requestId, keyId: key.key_id }, 'recording key use failed');
      });
      res.json({
        key_id: key.key_id,
        tenant_id: key.tenant_id,
        scopes: key.scopes,
        status: key.status,
        plan,
      });
    },
  });

  /** JWT authentication: the subject's active role assignment in the tenant; 404 when it has none. */
  route(r, '/internal/v1/subjects/resolve', {
    post: async (req, res) => {
      const body = parseOrThrow(resolveSubjectBody, req.body);
      const { assignment, plan } = await identity.resolveSubject(body.tenant_id, body.subject_id);
      res.json({
        tenant_id: assignment.tenant_id,
        subject_id: assignment.subject_id,
        assignment_id: assignment.id,
        roles: assignment.roles,
        permissions: assignment.permissions,
        plan,
      });
    },
  });

  /** The gateway's plan lookup. */
  route(r, '/internal/v1/tenants/:tenantId', {
    get: async (req, res) => {
      res.json(tenantView(await identity.getTenant(param(req, 'tenantId'))));
    },
  });

  return r;
}
