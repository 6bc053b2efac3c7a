import type { IncomingMessage, ServerResponse } from 'node:http';
import { boundedChecks, LivenessTracker, unauthorized } from '@mandate/shared/core';
import { serveMetrics } from '@mandate/shared/observability';
import { answerError, sendJson } from '@mandate/shared/http';
import { sameSecret } from '../auth/authenticate';
import { DEV_PREFIX } from '../dashboard/dev-sign-in';
import { dashboardHandler, isDashboardPath } from '../dashboard/static';
import type { GatewayDeps } from '../deps';
import { presentedCredential, tooManyAuthFailures, type AuthGuard } from './auth-guard';
import type { Call } from './call';

/** /healthz, /readyz and /livez as express routed them: any case, an optional trailing slash, GET or HEAD. */
function healthRoute(method: string | undefined, path: string): 'healthz' | 'readyz' | 'livez' | undefined {
  if ((method !== 'GET' && method !== 'HEAD') || path.length > 8) return undefined;
  const p = path.toLowerCase();
  if (p === '/healthz' || p === '/healthz/') return 'healthz';
  if (p === '/readyz' || p === '/readyz/') return 'readyz';
  if (p === '/livez' || p === '/livez/') return 'livez';
  return undefined;
}

/**
 * The gateway's own /metrics: its port is the public one, so only the operator token reads it
 * (Prometheus sends it as a bearer token). A request without a credential gets the route table's
 * 404; one with any other credential is a failed authentication (logged, counted against its
 * address: no unthrottled oracle for the operator token). No /metrics of another service is ever
 * forwarded (the table has no such route).
 */
function isMetricsScrape(req: IncomingMessage, path: string): boolean {
  return (req.method === 'GET' || req.method === 'HEAD') && path === '/metrics';
}

function isOperatorBearer(req: IncomingMessage, operatorToken: string): boolean {
  const auth = req.headers.authorization;
  return typeof auth === 'string' && auth.startsWith('Bearer ') && sameSecret(auth.slice(7), operatorToken);
}

/** /readyz: the gateway's dependencies and its limiter's; /livez: the same, down past the bound (liveness.ts). */
function readinessAnswer(deps: GatewayDeps, liveness: LivenessTracker) {
  const readiness = deps.readiness ?? (async () => ({ gateway: 'ok' }));
  return async (res: ServerResponse) => {
    try {
      const checks = { ...(await readiness()), ...deps.limiter?.readiness() };
      liveness.observe(checks);
      const ok = Object.values(checks).every((v) => v === 'ok' || v.startsWith('degraded'));
      sendJson(res, ok ? 200 : 503, JSON.stringify({ status: ok ? 'ready' : 'not_ready', checks }));
    } catch (err) {
      sendJson(res, 503, JSON.stringify({ status: 'not_ready', checks: { error: String(err) } }));
    }
  };
}

/** /metrics with a credential: the operator token serves it; anything else is a failed authentication. */
function metricsScrape(deps: GatewayDeps, guard: AuthGuard) {
  return async ({ req, res, requestId }: Call) => {
    try {
      const ip = guard.clientIpOf(req);
      // The operator token is never a recent credential (admission.ts): a blocked address is refused first.
      const wait = deps.limiter?.authBlocked?.(ip) ?? 0;
      if (wait > 0) throw tooManyAuthFailures(wait);
      if (isOperatorBearer(req, deps.operatorToken)) return serveMetrics(res);
      throw await guard.authFailed(
        req,
        '/metrics',
        requestId,
        ip,
        unauthorized('Invalid operator credentials'),
      );
    } catch (err) {
      answerError(res, err, deps.logger, { requestId, method: req.method, path: '/metrics' });
    }
  };
}

/**
 * Step 1, what is answered outside the API, without the route table: health, readiness, /metrics
 * with a credential, the dashboard's static files (docs/DASHBOARD.md), the development sign-in.
 * Its answer, or undefined when the request is the API's.
 */
export function outsideApiStep(deps: GatewayDeps, guard: AuthGuard) {
  const liveness = new LivenessTracker();
  const ready = readinessAnswer(deps, liveness);
  const live = async (res: ServerResponse) => {
    const readiness = deps.readiness ?? (async () => ({ gateway: 'ok' }));
    const checks = await boundedChecks(async () => ({
      ...(await readiness()),
      ...deps.limiter?.readiness(),
    }));
    const { status, body } = liveness.answer(checks);
    sendJson(res, status, JSON.stringify(body));
  };
  const scrape = metricsScrape(deps, guard);
  const dashboard =
    deps.dashboard &&
    dashboardHandler(deps.dashboard.dir, {
      devSignIn: !!deps.dashboard.devSignIn,
      oidc: deps.dashboard.oidc,
      walletSignIn: deps.dashboard.walletSignIn,
    });
  const devSignIn = deps.dashboard?.devSignIn;
  return (call: Call): Promise<void> | undefined => {
    const { req, res, rawPath } = call;
    const health = healthRoute(req.method, rawPath);
    if (health === 'healthz') return Promise.resolve(sendJson(res, 200, '{"status":"ok"}'));
    if (health === 'readyz') return ready(res);
    if (health === 'livez') return live(res);
    if (isMetricsScrape(req, rawPath) && presentedCredential(req) !== undefined) return scrape(call);
    if (dashboard && isDashboardPath(rawPath)) return Promise.resolve(dashboard(req, res));
    if (devSignIn && rawPath.startsWith(`${DEV_PREFIX}/`)) {
      const q = req.url!.indexOf('?');
      return Promise.resolve(devSignIn.handle(req, res, rawPath, q < 0 ? '' : req.url!.slice(q + 1)));
    }
    return undefined;
  };
}
