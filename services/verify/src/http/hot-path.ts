import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import {
  answerError,
  callerOfHeaders,
  isPlainJsonBody,
  markRequest,
  parseJsonBody,
  processMetrics,
  readPlainBody,
  rememberAuthentication,
  requestIdFor,
  sendJson,
  tenantOfCaller,
  traceRequest,
  type CallerContext,
} from '@mandate/shared';
import type { AppDeps } from '../deps';
import { performVerify } from '../domain/perform-verify';
import type { VerifyMetrics } from '../metrics';
import { parseVerifyRequest } from './schemas';

/** The express route's pattern, so both handlers count under one label. */
const verifyRoute = () => '/v1/verify';

/**
 * POST /v1/verify without express: the shared pipeline's steps in the express stack's order
 * (internal token, JSON body, tenant, validation) and so the same answers, at a fraction of the
 * per-request cost. Anything unusual — another route, a body that is not plain UTF-8 JSON of a
 * known length, a token that does not pass — goes to the express app untouched, which answers it
 * (a token refused here is not checked again there: its outcome travels with the request).
 */
export function verifyHotPath(
  deps: AppDeps,
  metrics: VerifyMetrics,
  fallback: RequestListener,
): RequestListener {
  const http = processMetrics();
  return (req, res) => {
    const url = req.url ?? '';
    if (
      req.method !== 'POST' ||
      (url !== '/v1/verify' && !url.startsWith('/v1/verify?')) ||
      !isPlainJsonBody(req.headers)
    ) {
      return fallback(req, res);
    }
    markRequest(req.headers['x-request-id'], 'v.in');
    void traceRequest(req, res, () => handle(req, res), '/v1/verify');
  };

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const authenticating = callerOfHeaders(deps.tokens, 'verify', req.headers);
    let caller: CallerContext;
    try {
      caller = await authenticating;
    } catch {
      // Express answers the 401 (timed and counted as its own) from this outcome, not a second check.
      rememberAuthentication(req, 'verify', authenticating);
      return fallback(req, res);
    }
    // Timed from here: a request handed to express above is timed (and counted) by express instead.
    http.timeResponse('verify', req, res, verifyRoute);
    const requestId = requestIdFor(req.headers['x-request-id']);
    markRequest(requestId, 'v.auth');
    res.setHeader('X-Request-Id', requestId);
    try {
      const body = parseJsonBody(await readPlainBody(req)) ?? {};
      markRequest(requestId, 'v.body');
      const tenantId = tenantOfCaller(caller);
      const answer = await performVerify(deps, metrics, {
        caller,
        tenantId,
        requestId,
        input: parseVerifyRequest(body),
      });
      sendJson(res, 200, answer);
      markRequest(requestId, 'v.sent');
    } catch (err) {
      answerError(res, err, deps.logger, { requestId, method: req.method, path: '/v1/verify' });
    }
  }
}
