import { AppError, markRequest, setSpanAttributes } from '@mandate/shared';
import { checkAccess, identify } from '../auth/authenticate';
import type { GatewayDeps } from '../deps';
import { limitSubject } from '../limits';
import type { RouteRule } from '../routes/table';
import { credentialDigest, tooManyAuthFailures, type AuthGuard } from './auth-guard';
import { bodyReader } from './body';
import type { Call } from './call';
import { limitCostStep } from './limit-cost';

/**
 * Step 5, who calls (sets `call.principal`), then their budget: an address over its failed-
 * authentication limit is refused, the credential authenticated (a failure logged and counted),
 * and one limiter call made. Throws the answer's error.
 */
export function admissionStep(deps: GatewayDeps, guard: AuthGuard) {
  const { recent } = guard;
  const ip = (call: Call) => () => guard.clientIpOf(call.req);
  const limitCost = limitCostStep(bodyReader());

  async function authenticateCall(call: Call, rule: RouteRule, params: Record<string, string>) {
    const { req, requestId } = call;
    const credential = rule.auth === 'public' ? undefined : credentialDigest(req);
    // An address over its failed-authentication limit is refused on every authenticated route
    // until its minute passes, before any lookup: only a credential that authenticated in the
    // last 10 minutes still goes on to authentication, so one stale key behind a shared address
    // (a NAT) does not lock out the others (docs/DECISIONS.md).
    if (rule.auth !== 'public' && !(credential !== undefined && recent.has(credential))) {
      const wait = deps.limiter?.authBlocked?.(ip(call)()) ?? 0;
      if (wait > 0) throw tooManyAuthFailures(wait);
    }
    try {
      call.principal = await identify(req, rule, params, deps);
    } catch (err) {
      if (err instanceof AppError && err.status === 401) {
        // A remembered credential that fails now (revoked, expired) loses its pass at once.
        if (credential !== undefined) recent.forget(credential);
        throw await guard.authFailed(req, rule.path, requestId, ip(call)(), err);
      }
      throw err;
    }
    // Identified before its access is checked: a call refused for its scope (403) or for another
    // tenant's path (404) is audited with its key id too (docs/API.md#audit-of-every-call).
    if (call.principal) checkAccess(call.principal, rule, params);
    markRequest(requestId, 'gw.auth');
    if (call.principal?.tenantId) setSpanAttributes({ 'mandate.tenant_id': call.principal.tenantId });
    // The operator token is chosen by a person and may be guessable: it never skips the limit.
    if (credential !== undefined && call.principal !== null && call.principal.actor.type !== 'operator')
      recent.remember(credential);
  }

  return async (call: Call, rule: RouteRule, params: Record<string, string>): Promise<void> => {
    await authenticateCall(call, rule, params);
    // One limiter call per request, after authentication (rejected credentials cost no budget).
    const subject = deps.limiter && limitSubject(rule, call.principal, ip(call));
    if (subject) {
      const decision = await deps.limiter!.check(subject, rule.limit, await limitCost(call, rule));
      for (const name in decision.headers) call.res.setHeader(name, decision.headers[name]!);
      if (!decision.allowed) throw new AppError('TOO_MANY_REQUESTS', decision.message!);
      markRequest(call.requestId, 'gw.limit');
    }
  };
}
