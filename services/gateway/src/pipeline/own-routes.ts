import { serviceUnavailable } from '@mandate/shared/core';
import { sendJson } from '@mandate/shared/http';
import type { Principal } from '../auth/authenticate';
import { whoAmI } from '../dashboard/me';
import type { GatewayDeps } from '../deps';
import type { RouteRule } from '../routes/table';
import type { Call } from './call';

/** Step 6a, the gateway's own routes (its contract): /v1/me, /v1/usage and the OpenAPI document. */
export function ownRoutesStep(deps: GatewayDeps) {
  let openApiJson: string | undefined;
  /** GET /v1/usage: the limiter's own counters (a gateway without one counts nothing). */
  const usageOf = async (principal: Principal) => {
    if (!deps.limiter?.usage)
      throw serviceUnavailable('Usage is not counted: the gateway has no rate limiter');
    return deps.limiter.usage(principal.tenantId!, principal.plan ?? 'beta');
  };
  return async ({ res, principal }: Call, rule: RouteRule): Promise<void> => {
    if (rule.path === '/v1/me') return sendJson(res, 200, JSON.stringify(whoAmI(principal!)));
    if (rule.path === '/v1/usage') return sendJson(res, 200, JSON.stringify(await usageOf(principal!)));
    openApiJson ??= JSON.stringify(deps.openApiDocument());
    return sendJson(res, 200, openApiJson);
  };
}
