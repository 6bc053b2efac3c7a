import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { AppError } from '@mandate/shared/core';
import { markRequest, processMetrics, traceRequest } from '@mandate/shared/observability';
import {
  answerError,
  callerOfHeaders,
  jsonBody,
  parseJsonBody,
  readPlainBody,
  requestIdFor,
  sendJson,
  tenantOfCaller,
} from '@mandate/shared/http';
import type { AppDeps } from '../deps';
import { performVerify } from '../domain/perform-verify';
import { routes } from '../contract';
import { isPlainJsonBody } from './plain-json-body';
import { parseVerifyRequest } from './schemas';

const VERIFY_PATH = routes.verify.path;
/** What express's router would match for the path: any case, one optional trailing slash. */
const VERIFY_PATHNAME = new RegExp(`^${VERIFY_PATH.replace(/[/.]/g, '\\$&')}/?$`, 'i');
const verifyLabel = () => VERIFY_PATH;

/**
 * POST /v1/verify's one handler, served on node:http in front of the express app that serves
 * verify's other routes (docs/DECISIONS.md, "How the services serve HTTP"). It takes the steps of
 * every internal route in their order (request id, internal token, JSON body, tenant, validation)
 * from the shared pipeline, so its answers are the express routes' answers, at a fraction of
 * express's cost per request. Every other path goes to `rest`.
 */
export function verifyRoute(deps: AppDeps, rest: RequestListener): RequestListener {
  const http = processMetrics();
  const readJson = jsonBodyReader();
  return (req, res) => {
    if (!VERIFY_PATHNAME.test(pathnameOf(req.url))) return rest(req, res);
    markRequest(req.headers['x-request-id'], 'v.in');
    void traceRequest(req, res, () => handle(req, res), VERIFY_PATH);
  };

  async function handle(req: IncomingMessage, res: ServerResponse) {
    http.timeResponse('verify', req, res, verifyLabel);
    const requestId = requestIdFor(req.headers['x-request-id']);
    res.setHeader('X-Request-Id', requestId);
    try {
      const caller = await callerOfHeaders(deps.tokens, 'verify', req.headers);
      markRequest(requestId, 'v.auth');
      if (req.method !== 'POST') throw methodNotAllowed();
      const body = await readJson(req, res);
      markRequest(requestId, 'v.body');
      const answer = await performVerify(deps, deps.metrics, {
        caller,
        tenantId: tenantOfCaller(caller),
        requestId,
        input: parseVerifyRequest(body),
      });
      sendJson(res, 200, answer);
      markRequest(requestId, 'v.sent');
    } catch (err) {
      answerError(res, err, deps.logger, { requestId, method: req.method, path: VERIFY_PATH });
    }
  }
}

/**
 * The body as every internal route reads it (shared jsonBody): a plain UTF-8 JSON body of a known
 * length is read in one buffer; a compressed, chunked, oversized or otherwise unusual one goes
 * through the same body-parser steps as the express routes (inflate, charset, 413).
 */
function jsonBodyReader() {
  const steps = jsonBody();
  return async (req: IncomingMessage, res: ServerResponse): Promise<unknown> => {
    if (isPlainJsonBody(req.headers)) return parseJsonBody(await readPlainBody(req));
    const parsed = req as IncomingMessage & { body?: unknown };
    for (const step of steps) {
      await new Promise<void>((resolve, reject) =>
        step(parsed as never, res as never, (err?: unknown) => (err ? reject(err) : resolve())),
      );
    }
    return parsed.body;
  };
}

/** Every other method of the path: 405 with Allow, as for every route (after the token, as there). */
function methodNotAllowed(): AppError {
  return new AppError('METHOD_NOT_ALLOWED', 'Method not allowed; use POST', { Allow: 'POST' });
}

function pathnameOf(url: string | undefined): string {
  const query = url?.indexOf('?') ?? -1;
  return url === undefined ? '' : query === -1 ? url : url.slice(0, query);
}
