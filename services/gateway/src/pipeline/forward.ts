import { CachedTokenMinter } from '@mandate/shared/core';
import { markRequest } from '@mandate/shared/observability';
import type { GatewayDeps } from '../deps';
import { forward } from '../http/proxy';
import { secretMembersOf } from '../idempotency/idempotency';
import type { RouteRule, ServiceName } from '../routes/table';
import { bodyReader } from './body';
import type { Call } from './call';

/** A route one of the services answers (every route but the gateway's own). */
export type ServiceRoute = RouteRule & { service: Exclude<ServiceName, 'gateway'> };
export const isServiceRoute = (rule: RouteRule): rule is ServiceRoute => rule.service !== 'gateway';

/**
 * Step 6b, a service's route: the body read, an Idempotency-Key POST replayed or captured, an
 * internal token minted for the caller, and the call forwarded to the service that owns the route.
 */
export function forwardStep(deps: GatewayDeps) {
  const readBody = bodyReader();
  const minter = new CachedTokenMinter(deps.tokens);
  return async (
    { req, res, requestId, principal, body: read }: Call,
    rule: ServiceRoute,
    path: string,
  ): Promise<void> => {
    // Read already when the limits needed it (an AuthZEN batch's items: limit-cost.ts).
    const body = read ? read.raw : await readBody(req, res);
    markRequest(requestId, 'gw.body');
    // An Idempotency-Key POST is answered in one piece: the capture stores the body it ends with.
    // A route that hands a capability to callers without credentials is never stored nor replayed:
    // they have no caller of their own to scope a record by (docs/API.md#idempotency).
    const { idempotency } = deps;
    const keyed =
      idempotency !== undefined && req.method === 'POST' && req.headers['idempotency-key'] !== undefined;
    const { replay } = rule;
    const call = {
      path,
      body,
      requestId,
      secrets: secretMembersOf(rule),
      buffered: keyed && replay !== false,
      replay,
    };
    // Only a POST carrying Idempotency-Key reaches the store (docs/API.md#idempotency); true = a replay.
    if (keyed && (await idempotency.apply(req, res, call, principal))) return;
    // One token per caller, reused for a few seconds; the request id travels in X-Request-Id.
    const token = await minter.mint(
      {
        tenantId: principal?.tenantId ?? null,
        actor: principal?.actor ?? { type: 'system' },
        permissions: principal?.permissions ?? [],
      },
      rule.service,
    );
    markRequest(requestId, 'gw.forward');
    await forward(req, res, deps.upstreams[rule.service], rule.service, path, token, call, deps.logger);
    markRequest(requestId, 'gw.done');
  };
}
