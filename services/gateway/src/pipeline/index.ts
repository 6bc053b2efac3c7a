import type { IncomingMessage, ServerResponse } from 'node:http';
import { answerError } from '@mandate/shared/http';
import type { GatewayDeps } from '../deps';
import { admissionStep } from './admission';
import { auditStep } from './audit';
import { authGuard } from './auth-guard';
import type { Call } from './call';
import { forwardStep, isServiceRoute } from './forward';
import { observeStep } from './observe';
import { outsideApiStep } from './outside-api';
import { ownRoutesStep } from './own-routes';
import { routeStep } from './route';

export { TOO_MANY_AUTH_FAILURES } from './auth-guard';
export { accessLogLine } from './observe';

/**
 * The route handler of every request, as a pipeline of named steps, each in its own module (and
 * each function at most 60 lines, eslint's max-lines-per-function on this folder): outside the API
 * (health, /metrics, dashboard) → observed (metrics, access log) → routed (404/405) → audited →
 * admitted (authentication, limits) → answered by the gateway itself or forwarded to its service.
 */
export function gatewayHandler(deps: GatewayDeps) {
  const guard = authGuard(deps);
  const outsideApi = outsideApiStep(deps, guard);
  const observe = observeStep(deps);
  const route = routeStep(deps);
  const audit = auditStep(deps);
  const admit = admissionStep(deps, guard);
  const answerOwnRoute = ownRoutesStep(deps);
  const forwardToService = forwardStep(deps);

  return async function handle(
    req: IncomingMessage,
    res: ServerResponse,
    rawPath: string,
    requestId: string,
  ): Promise<void> {
    const call: Call = {
      req,
      res,
      requestId,
      rawPath,
      started: performance.now(),
      routePattern: null,
      principal: null,
    };
    const outside = outsideApi(call);
    if (outside) return outside;
    observe(call);
    const match = route(call);
    if (!match) return;
    audit(call, match.rule, match.path);
    try {
      await admit(call, match.rule, match.params);
      if (!isServiceRoute(match.rule)) return await answerOwnRoute(call, match.rule);
      await forwardToService(call, match.rule, match.path);
    } catch (err) {
      answerError(res, err, deps.logger, { requestId, method: req.method, path: match.path });
    }
  };
}
