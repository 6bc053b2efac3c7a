import { AppError, callerOf, implement, mountContracts, tenantOf } from '@mandate/shared';
import { Router, type Request } from 'express';
import type { Deps } from '../deps';
import type { AccessBaseline } from '../access-baselines/access-baseline';
import { getAccessBaseline, saveAccessBaseline } from '../access-baselines/access-baselines';
import type { ApiKey } from '../api-keys/api-key';
import {
  activateApiKey,
  createApiKey,
  getApiKey,
  listApiKeys,
  recordKeyUse,
  resolveApiKey,
  revokeApiKey,
  rotateApiKey,
  type IssuedKey,
} from '../api-keys/api-keys';
import { OperatorRequired } from '../common/errors';
import type { OnboardingRequest } from '../onboarding/onboarding';
import {
  approveOnboarding,
  listOnboardingRequests,
  rejectOnboarding,
  requestOnboarding,
} from '../onboarding/onboarding-requests';
import {
  assignRoles,
  getRoleAssignment,
  listRoleAssignments,
  resolveSubject,
  revokeRoleAssignment,
  updateRoleAssignment,
} from '../role-assignments/role-assignments';
import type { RoleAssignment } from '../role-assignments/roles';
import { TenantNotFound, type Tenant } from '../tenants/tenant';
import { createTenant, getTenant, listTenants } from '../tenants/tenants';
import type { WidgetConfig } from '../widget-config/widget';
import { getWidgetConfig, putWidgetConfig } from '../widget-config/widget-config';
import { internalRoutes, routes } from '../contract';
import { pageView, pageWindow } from './pages';

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

export const accessBaselineView = (b: AccessBaseline) => ({
  tenant_id: b.tenant_id,
  saved_at: b.saved_at,
  saved_by: b.saved_by,
  snapshot: b.snapshot,
});

// ── helpers ──────────────────────────────────────────────────────────────────

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

// ── public routes (/v1) ──────────────────────────────────────────────────────

export function publicRoutes(deps: Deps): Router {
  const r = Router();

  mountContracts(r, [
    implement(routes.createTenant)(async ({ body }, req) => {
      requireOperator(req);
      const value = await createTenant(
        deps,
        {
          name: body.name,
          plan: body.plan,
          adminSubjectId: body.admin_subject_id,
        },
        callerOf(req),
      );
      return {
        status: 201,
        body: { tenant: tenantView(value.tenant), api_key: createdApiKeyView(value.issued) },
      };
    }),

    implement(routes.listTenants)(async ({ query }, req) => {
      requireOperator(req);
      const page = await listTenants(deps, pageWindow(query));
      return { status: 200, body: pageView(page, tenantView) };
    }),

    implement(routes.getTenant)(async (_input, req) => ({
      status: 200,
      body: tenantView(await getTenant(deps, pathTenant(req))),
    })),

    implement(routes.createApiKey)(async ({ body }, req) => {
      const tenantId = pathTenant(req);
      const value = await createApiKey(deps, tenantId, body, callerOf(req));
      return { status: 201, body: createdApiKeyView(value) };
    }),
    implement(routes.listApiKeys)(async ({ query }, req) => {
      const tenantId = pathTenant(req);
      const page = await listApiKeys(deps, tenantId, pageWindow(query));
      return { status: 200, body: pageView(page, apiKeyView) };
    }),

    implement(routes.getApiKey)(async ({ params }, req) => ({
      status: 200,
      body: apiKeyView(await getApiKey(deps, pathTenant(req), params.keyId)),
    })),

    implement(routes.rotateApiKey)(async ({ params }, req) => {
      const value = await rotateApiKey(deps, pathTenant(req), params.keyId, callerOf(req));
      return {
        status: 201,
        body: { ...createdApiKeyView(value), replaces_key_id: value.key.replaces_key_id! },
      };
    }),

    implement(routes.activateApiKey)(async ({ params }, req) => {
      const value = await activateApiKey(deps, pathTenant(req), params.keyId, callerOf(req));
      return { status: 200, body: apiKeyView(value) };
    }),

    implement(routes.revokeApiKey)(async ({ params }, req) => {
      const value = await revokeApiKey(deps, pathTenant(req), params.keyId, callerOf(req));
      return { status: 200, body: apiKeyView(value) };
    }),

    implement(routes.createRoleAssignment)(async ({ body }, req) => {
      const tenantId = pathTenant(req);
      const value = await assignRoles(
        deps,
        tenantId,
        {
          subjectId: body.subject_id,
          roles: body.roles,
        },
        callerOf(req),
      );
      return { status: 201, body: roleAssignmentView(value) };
    }),
    implement(routes.listRoleAssignments)(async ({ query }, req) => {
      const tenantId = pathTenant(req);
      const page = await listRoleAssignments(deps, tenantId, {
        ...pageWindow(query),
        subjectId: query.subject_id,
        status: query.status,
      });
      return { status: 200, body: pageView(page, roleAssignmentView) };
    }),

    implement(routes.getRoleAssignment)(async ({ params }, req) => ({
      status: 200,
      body: roleAssignmentView(await getRoleAssignment(deps, pathTenant(req), params.id)),
    })),
    implement(routes.updateRoleAssignment)(async ({ params, body }, req) => {
      const tenantId = pathTenant(req);
      const value = await updateRoleAssignment(
        deps,
        tenantId,
        params.id,
        { roles: body.roles, subjectId: body.subject_id },
        callerOf(req),
      );
      return { status: 200, body: roleAssignmentView(value) };
    }),

    implement(routes.revokeRoleAssignment)(async ({ params }, req) => {
      const tenantId = pathTenant(req);
      const value = await revokeRoleAssignment(deps, tenantId, params.id, callerOf(req));
      return { status: 200, body: roleAssignmentView(value) };
    }),

    implement(routes.getWidgetConfig)(async (_input, req) => ({
      status: 200,
      body: widgetConfigView(await getWidgetConfig(deps, pathTenant(req))),
    })),
    implement(routes.putWidgetConfig)(async ({ body }, req) => {
      const tenantId = pathTenant(req);
      const value = await putWidgetConfig(deps, tenantId, body, callerOf(req));
      return { status: 200, body: widgetConfigView(value) };
    }),

    implement(routes.getAccessBaseline)(async (_input, req) => {
      const tenantId = pathTenant(req);
      const baseline = await getAccessBaseline(deps, tenantId);
      return {
        status: 200,
        body: baseline
          ? accessBaselineView(baseline)
          : { tenant_id: tenantId, saved_at: null, saved_by: null, snapshot: null },
      };
    }),
    implement(routes.putAccessBaseline)(async (_input, req) => {
      const tenantId = pathTenant(req);
      return {
        status: 200,
        body: accessBaselineView(await saveAccessBaseline(deps, tenantId, callerOf(req))),
      };
    }),

    /** Public: the gateway forwards it without a tenant (actor system), limited per client IP. */
    implement(routes.requestOnboarding)(async ({ body }, req) => {
      const value = await requestOnboarding(
        deps,
        {
          organizationName: body.organization_name,
          contactEmail: body.contact_email,
          country: body.country,
          useCase: body.use_case,
        },
        callerOf(req),
      );
      // A new request is always PENDING (the contract says so with a literal).
      return { status: 202, body: { id: value.id, status: 'PENDING', created_at: value.created_at } };
    }),

    implement(routes.listOnboardingRequests)(async ({ query }, req) => {
      requireOperator(req);
      const page = await listOnboardingRequests(deps, {
        ...pageWindow(query),
        status: query.status,
      });
      return { status: 200, body: pageView(page, onboardingView) };
    }),

    implement(routes.approveOnboardingRequest)(async ({ params, body }, req) => {
      requireOperator(req);
      const value = await approveOnboarding(
        deps,
        params.id,
        {
          plan: body.plan,
          name: body.name,
          adminSubjectId: body.admin_subject_id,
        },
        callerOf(req),
      );
      return {
        status: 201,
        body: {
          onboarding_request: onboardingView(value.request),
          tenant: tenantView(value.tenant),
          api_key: createdApiKeyView(value.issued),
          role_assignment: value.assignment ? roleAssignmentView(value.assignment) : null,
        },
      };
    }),

    implement(routes.rejectOnboardingRequest)(async ({ params, body }, req) => {
      requireOperator(req);
      const value = await rejectOnboarding(deps, params.id, { reason: body.reason }, callerOf(req));
      return { status: 200, body: onboardingView(value) };
    }),
  ]);

  return r;
}

// ── internal routes (/internal/v1), for the gateway ──────────────────────────

export function gatewayInternalRoutes(deps: Deps): Router {
  const r = Router();
  const keyAnswer = async (item: { api_key: string; tenant_id?: string }, requestId?: string) => {
    const { key, plan } = await resolveApiKey(deps, item.api_key, item.tenant_id);
    // last_used_at is bookkeeping: it must neither slow down nor fail authentication.
    recordKeyUse(deps, key.tenant_id, key.key_id).catch((err) => {
      deps.logger.warn({ err, requestId, keyId: key.key_id }, 'recording key use failed');
    });
    return { key_id: key.key_id, tenant_id: key.tenant_id, scopes: key.scopes, status: key.status, plan };
  };
  const subjectAnswer = async (item: { tenant_id: string; subject_id: string }) => {
    const { assignment, plan } = await resolveSubject(deps, item.tenant_id, item.subject_id);
    return {
      tenant_id: assignment.tenant_id,
      subject_id: assignment.subject_id,
      assignment_id: assignment.id,
      roles: assignment.roles,
      permissions: assignment.permissions,
      plan,
    };
  };
  mountContracts(r, [
    implement(internalRoutes.resolveApiKey)(async ({ body }, req) => ({
      status: 200,
      body: await keyAnswer(body, req.requestId),
    })),
    implement(internalRoutes.resolveSubject)(async ({ body }) => ({
      status: 200,
      body: await subjectAnswer(body),
    })),
    implement(internalRoutes.resolveApiKeys)(async ({ body }, req) => ({
      status: 200,
      body: { results: await Promise.all(body.items.map((item) => orNull(keyAnswer(item, req.requestId)))) },
    })),
    implement(internalRoutes.resolveSubjects)(async ({ body }) => ({
      status: 200,
      body: { results: await Promise.all(body.items.map((item) => orNull(subjectAnswer(item)))) },
    })),
  ]);
  return r;
}

/** A lookup's answer, or null where the single route would answer 404; any other failure fails the call. */
async function orNull<T>(answer: Promise<T>): Promise<T | null> {
  try {
    return await answer;
  } catch (err) {
    if (err instanceof AppError && err.status === 404) return null;
    throw err;
  }
}
