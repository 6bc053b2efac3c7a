import { AppError, eventsNotRecordable } from '@mandate/shared/core';
import { markRequest, setSpanAttributes } from '@mandate/shared/observability';
import { checkAccess, credentialIdentity, identify, presentedCredential } from '../auth/authenticate';
import type { GatewayDeps } from '../deps';
import { limitSubject } from '../limits';
import type { RouteRule } from '../routes/table';
import { tooManyAuthFailures, type AuthGuard } from './auth-guard';
import { bodyReader } from './body';
import type { Call } from './call';
import { limitCostStep } from './limit-cost';

/**
 * An address over its failed-authentication limit is refused on every authenticated route until
 * its minute passes, except for a valid credential, in whatever header form it comes
 * (docs/DECISIONS.md, "Authentication"): one that authenticated here in the last 10
 * minutes goes on to authentication, so does an API key in identity's list of usable keys
 * (UsableKeys) and a JWT whose signature verifies, and so does any other while the address has
 * lookups left (BlockedLookups). True when the call took one of those lookups.
 */
async function admitBlocked(
  deps: GatewayDeps,
  guard: AuthGuard,
  call: Call,
  address: string,
  identity?: string,
): Promise<boolean> {
  if (identity !== undefined && guard.recent.has(identity)) return false;
  const wait = deps.limiter?.authBlocked?.(address) ?? 0;
  if (wait === 0) return false;
  if (await provablyValid(deps, call)) return false;
  if (identity === undefined || !guard.lookups.take(address, identity)) throw tooManyAuthFailures(wait);
  return true;
}

/** A credential shown valid without a lookup: a listed API key, or a JWT a trusted issuer signed. */
async function provablyValid(deps: GatewayDeps, call: Call): Promise<boolean> {
  const credential = presentedCredential(call.req);
  if (credential?.kind === 'api_key') return (await deps.usableKeys?.admits(credential.secret)) ?? false;
  if (credential?.kind === 'jwt') return (await deps.jwt?.verifies?.(credential.token)) ?? false;
  return false;
}

/**
 * Step 5, who calls (sets `call.principal`), then their budget: an address over its failed-
 * authentication limit is refused any credential that is not valid, the credential authenticated
 * (a failure logged and counted), and one limiter call made. Throws the answer's error.
 */
export function admissionStep(deps: GatewayDeps, guard: AuthGuard) {
  const { recent, lookups } = guard;
  const ip = (call: Call) => () => guard.clientIpOf(call.req);
  const limitCost = limitCostStep(bodyReader());

  async function authenticateCall(call: Call, rule: RouteRule, params: Record<string, string>) {
    const { req, requestId } = call;
    const identity = rule.auth === 'public' ? undefined : credentialIdentity(req);
    const took = rule.auth !== 'public' && (await admitBlocked(deps, guard, call, ip(call)(), identity));
    try {
      call.principal = await identify(req, rule, params, deps);
    } catch (err) {
      if (err instanceof AppError && err.status === 401) {
        // A remembered credential that fails now (revoked, expired) loses its pass at once.
        if (identity !== undefined) recent.forget(identity);
        const answer = await guard.authFailed(req, rule.path, requestId, ip(call)(), err);
        if (identity !== undefined && answer.status === 429) lookups.failed(ip(call)(), identity);
        throw answer;
      }
      if (took) lookups.giveBack(ip(call)());
      throw err;
    }
    if (took) lookups.giveBack(ip(call)());
    // Identified before its access is checked: a call refused for its scope (403) or for another
    // tenant's path (404) is audited with its key id too (docs/API.md#audit-of-every-call).
    if (call.principal) checkAccess(call.principal, rule, params);
    markRequest(requestId, 'gw.auth');
    if (call.principal?.tenantId) setSpanAttributes({ 'mandate.tenant_id': call.principal.tenantId });
    // The operator token is chosen by a person and may be guessable: it never skips the limit
    // (credentialIdentity has none for it).
    if (identity !== undefined && call.principal !== null) recent.remember(identity);
  }

  return async (call: Call, rule: RouteRule, params: Record<string, string>): Promise<void> => {
    await authenticateCall(call, rule, params);
    // A call whose API_CALL could not be kept is refused before it runs or counts, and its 503 is
    // not audited either: that event would only fill the spool further (docs/DECISIONS.md, "Event spool full").
    if (call.principal && deps.publisher.accepting?.() === false) {
      call.unaudited = true;
      throw eventsNotRecordable('API call events');
    }
    // One limiter call per request, after authentication (rejected credentials cost no budget).
    const { limiter } = deps;
    const subject = limiter && limitSubject(rule, call.principal, ip(call));
    if (limiter && subject) {
      const decision = await limiter.check(subject, rule.limit, await limitCost(call, rule));
      for (const name in decision.headers) call.res.setHeader(name, decision.headers[name]!);
      if (!decision.allowed) throw new AppError('TOO_MANY_REQUESTS', decision.message!);
      markRequest(call.requestId, 'gw.limit');
    }
  };
}
