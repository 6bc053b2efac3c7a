import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { z } from 'zod';
import {
  AppError,
  BODY_LIMIT_BYTES,
  INTERNAL_TOKEN_HEADER,
  describeZodError,
  parseJsonBody,
  processMetrics,
  requestIdFor,
  type CallerContext,
  type ErrorEnvelope,
} from '@mandate/shared';
import type { Deps } from '../app';
import type { VerifyMetrics } from '../metrics';
import { performVerify } from './routes';

const JSON_MEDIA_TYPE = /^application\/([a-z0-9.+-]*\+)?json$/i;
const UTF8_CHARSET = /^charset\s*=\s*"?utf-8"?$/i;

/** A plain JSON body in UTF-8 of a known length: the only kind the hot path reads itself. */
function plainJsonBody(req: IncomingMessage): boolean {
  const { headers } = req;
  if (headers['transfer-encoding'] !== undefined || headers['content-encoding'] !== undefined) return false;
  const length = Number(headers['content-length']);
  if (!(length > 0 && length <= BODY_LIMIT_BYTES)) return false;
  const type = headers['content-type'];
  if (typeof type !== 'string') return false;
  // What the gateway forwards from every JSON client, decided without splitting.
  if (type === 'application/json' || type === 'application/json; charset=utf-8') return true;
  const [media, ...params] = type.split(';');
  if (!JSON_MEDIA_TYPE.test(media!.trim())) return false;
  return params.every((p) => UTF8_CHARSET.test(p.trim()));
}

function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    // A client that goes away mid-body gets no answer; nothing else to do.
    req.on('error', () => resolve(undefined));
  });
}

function send(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}) {
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

/** The express route's pattern, so both handlers count under one label. */
const verifyRoute = () => '/v1/verify';

/**
 * POST /v1/verify without express: the same checks in the same order as the express stack
 * (internal token, JSON body, tenant, validation) and the same answers, at a fraction of the
 * per-request cost. Anything unusual — another route, a missing or bad token, a body that is not
 * plain UTF-8 JSON of a known length — goes to the express app untouched, which answers it.
 */
export function verifyHotPath(
  deps: Deps,
  metrics: VerifyMetrics,
  fallback: RequestListener,
): RequestListener {
  const http = processMetrics();
  return (req, res) => {
    const url = req.url ?? '';
    const token = req.headers[INTERNAL_TOKEN_HEADER];
    if (
      req.method !== 'POST' ||
      (url !== '/v1/verify' && !url.startsWith('/v1/verify?')) ||
      typeof token !== 'string' ||
      token === '' ||
      !plainJsonBody(req)
    ) {
      return fallback(req, res);
    }
    void handle(req, res, token);
  };

  async function handle(req: IncomingMessage, res: ServerResponse, token: string) {
    let caller: CallerContext;
    try {
      caller = await deps.tokens.verify(token, 'verify');
    } catch {
      // The express stack answers the 401 in its own words.
      return fallback(req, res);
    }
    // Timed from here: a request handed to express above is timed (and counted) by express instead.
    http.timeResponse('verify', req, res, verifyRoute);
    const requestId = requestIdFor(req.headers['x-request-id']);
    res.setHeader('X-Request-Id', requestId);
    // The request id of the call is the one it names (the gateway reuses tokens across requests).
    if (typeof req.headers['x-request-id'] === 'string' && requestId === req.headers['x-request-id'])
      caller.requestId = requestId;
    try {
      const raw = await readBody(req);
      if (!raw) return;
      // The shared parser: invalid UTF-8, malformed JSON and forbidden member names are 400 (AppError, below).
      const body = parseJsonBody(raw) ?? {};
      if (!caller.tenantId)
        return sendError(res, 401, { error: 'UNAUTHORIZED', message: 'Tenant context required' });
      const answer = await performVerify(deps, metrics, {
        caller,
        tenantId: caller.tenantId,
        requestId,
        body,
      });
      send(res, 200, answer);
    } catch (err) {
      if (err instanceof AppError) return sendError(res, err.status, err.toEnvelope(), err.headers);
      if (err instanceof z.ZodError)
        return sendError(res, 400, { error: 'BAD_REQUEST', message: describeZodError(err) });
      deps.logger.error({ err, requestId, method: req.method, path: '/v1/verify' }, 'unhandled error');
      sendError(res, 500, { error: 'INTERNAL_ERROR', message: `Internal error (request ${requestId})` });
    }
  }

  function sendError(
    res: ServerResponse,
    status: number,
    envelope: ErrorEnvelope,
    headers?: Record<string, string>,
  ) {
    if (res.headersSent) return;
    send(res, status, JSON.stringify(envelope), headers);
  }
}
