import { buildEvent, callerOf, decodeCursor, parseOrThrow, route, tenantOf } from '@mandate/shared';
import { Router, type Request } from 'express';
import type { Deps } from '../app';
import type { ApiKey } from '../domain/api-key';
import { OperatorRequired, TenantNotFound } from '../domain/errors';
import type { DomainEvent, Identity, IssuedKey } from '../domain/identity';
import type { Tenant } from '../domain/tenant';
import {
  createApiKeyBody,
  createTenantBody,
  listApiKeysQuery,
  resolveKeyBody,
  resolveSubjectBody,
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

// ── helpers ──────────────────────────────────────────────────────────────────

/** Publishes after a successful write; a broker failure is logged, never turned into a failed answer. */
async function publish(deps: Deps, req: Request, events: DomainEvent[]): Promise<void> {
  if (events.length === 0) return;
  const caller = callerOf(req);
  const occurredAt = deps.clock.now();
  try {
    await deps.publisher.publish(events.map((e) => buildEvent({ ...e, caller, occurredAt })));
  } catch (err) {
    deps.logger.error(
      { err, requestId: req.requestId, eventTypes: events.map((e) => e.type) },
      'publishing audit events failed; the write stands',
    );
  }
}

/** The path's tenant must be the caller's: another tenant is indistinguishable from a missing one. */
function pathTenant(req: Request): string {
  const tenantId = tenantOf(req);
  if (req.params.tenantId !== tenantId) throw new TenantNotFound();
  return tenantId;
}

function param(req: Request, name: string): string {
  return String(req.params[name]);
}

// ── public routes (/v1) ──────────────────────────────────────────────────────

export function publicRoutes(deps: Deps, identity: Identity): Router {
  const r = Router();

  route(r, '/v1/platform/tenants', {
    post: async (req, res) => {
      if (callerOf(req).actor.type !== 'operator') throw new OperatorRequired();
      const body = parseOrThrow(createTenantBody, req.body);
      const { value, events } = await identity.createTenant({
        name: body.name,
        plan: body.plan,
        adminSubjectId: body.admin_subject_id,
      });
      await publish(deps, req, events);
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
      const { value, events } = await identity.createApiKey(tenantId, body);
      await publish(deps, req, events);
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
      const { value, events } = await identity.rotateApiKey(pathTenant(req), param(req, 'keyId'));
      await publish(deps, req, events);
      res.status(201).json({ ...createdApiKeyView(value), replaces_key_id: value.key.replaces_key_id });
    },
  });

  route(r, '/v1/tenants/:tenantId/api-keys/:keyId/activate', {
    post: async (req, res) => {
      const { value, events } = await identity.activateApiKey(pathTenant(req), param(req, 'keyId'));
      await publish(deps, req, events);
      res.json(apiKeyView(value));
    },
  });

  route(r, '/v1/tenants/:tenantId/api-keys/:keyId/revoke', {
    post: async (req, res) => {
      const { value, events } = await identity.revokeApiKey(pathTenant(req), param(req, 'keyId'));
      await publish(deps, req, events);
      res.json(apiKeyView(value));
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
