import { setRequestRoute } from '@mandate/shared/observability';
import { sendEnvelope } from '@mandate/shared/http';
import type { GatewayDeps } from '../deps';
import { RouteMatcher } from '../routes/match';
import { ROUTES } from '../routes/table';
import type { Call } from './call';

/**
 * Step 3, the route table: a path no route has is 404, a method the path does not take 405 (with
 * Allow), both answered here (undefined); otherwise the matched rule, its params and the path.
 */
export function routeStep(deps: GatewayDeps) {
  const matcher = new RouteMatcher(deps.routes ?? ROUTES);
  return (call: Call) => {
    const { req, res } = call;
    const match = matcher.match(req.method ?? '', call.rawPath);
    if (match.kind === 'not_found') {
      sendEnvelope(res, 404, { error: 'NOT_FOUND', message: 'Route not found' });
      return undefined;
    }
    if (match.kind === 'method_not_allowed') {
      sendEnvelope(
        res,
        405,
        {
          error: 'METHOD_NOT_ALLOWED',
          message: `Method ${req.method} not allowed; use ${match.allowed.join(', ')}`,
        },
        { Allow: match.allowed.join(', ') },
      );
      return undefined;
    }
    call.routePattern = match.rule.path;
    setRequestRoute(req.method, match.rule.path);
    return match;
  };
}
