import { callerOf, implement, type Implementation } from '@mandate/shared/http';
import { orNull } from '../http/lookup';
import { pick } from '../http/view';
import { internalRoutes, routes } from '../contract';
import type { Deps } from '../deps';
import { pageView, pageWindow } from '../http/pages';
import { pathTenant } from '../http/tenancy';
import type { ApiKey } from './api-key';
import {
  activateApiKey,
  createApiKey,
  getApiKey,
  listApiKeys,
  listUsableKeys,
  recordKeyUse,
  recordKeysUsed,
  resolveApiKey,
  revokeApiKey,
  rotateApiKey,
  type IssuedKey,
} from './api-keys';

/** The one place a stored key becomes a response body: never its secret or hash. */
export const apiKeyView = (k: ApiKey) =>
  pick(k, [
    'key_id',
    'name',
    'scopes',
    'status',
    'created_at',
    'last_used_at',
    'replaces_key_id',
    'replaced_by_key_id',
    'grace_ends_at',
  ]);

/** The creation shape of docs/API.md, "API keys"; the secret appears here and nowhere else. */
export const createdApiKeyView = ({ key, secret }: IssuedKey) => ({
  key_id: key.key_id,
  api_key: secret,
  ...pick(key, ['name', 'scopes', 'status', 'created_at']),
});

export const apiKeyHandlers = (deps: Deps): Implementation[] => [
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

  implement(routes.activateApiKey)(async ({ params, body }, req) => {
    const value = await activateApiKey(
      deps,
      pathTenant(req),
      params.keyId,
      callerOf(req),
      body.grace_seconds,
    );
    return { status: 200, body: apiKeyView(value) };
  }),

  implement(routes.revokeApiKey)(async ({ params }, req) => {
    const value = await revokeApiKey(deps, pathTenant(req), params.keyId, callerOf(req));
    return { status: 200, body: apiKeyView(value) };
  }),
];

/** For the gateway: an API key resolved to its tenant, scopes and plan. */
export const apiKeyInternalHandlers = (deps: Deps): Implementation[] => {
  const keyAnswer = async (item: { api_key: string; tenant_id?: string }, requestId?: string) => {
    const { key, plan, usableUntil } = await resolveApiKey(deps, item.api_key, item.tenant_id);
    // last_used_at is bookkeeping: it must neither slow down nor fail authentication.
    recordKeyUse(deps, key.tenant_id, key.key_id).catch((err) => {
      deps.logger.warn({ err, requestId, keyId: key.key_id }, 'recording key use failed');
    });
    return {
      key_id: key.key_id,
      tenant_id: key.tenant_id,
      scopes: key.scopes,
      status: key.status,
      plan,
      ...(usableUntil ? { usable_until: usableUntil } : {}),
    };
  };
  return [
    implement(internalRoutes.resolveApiKey)(async ({ body }, req) => ({
      status: 200,
      body: await keyAnswer(body, req.requestId),
    })),
    implement(internalRoutes.recordKeysUsed)(async ({ body }) => {
      await recordKeysUsed(deps, body.items);
      return { status: 200, body: { recorded: body.items.length } };
    }),
    implement(internalRoutes.usableKeys)(async ({ body }) => ({
      status: 200,
      body: await listUsableKeys(deps, body),
    })),
    implement(internalRoutes.resolveApiKeys)(async ({ body }, req) => ({
      status: 200,
      body: { results: await Promise.all(body.items.map((item) => orNull(keyAnswer(item, req.requestId)))) },
    })),
  ];
};
