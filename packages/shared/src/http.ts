import express, {
  type Express,
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
  type Router,
} from 'express';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { AppError, badRequest, describeZodError, type ErrorEnvelope } from './errors';
import type { Logger } from './logger';
import { processMetrics, serveMetrics } from './metrics';

export const BODY_LIMIT_BYTES = 64 * 1024;
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The request id of a request: its own X-Request-Id when that is sane, else a new one. */
export function requestIdFor(incoming: string | string[] | undefined): string {
  return typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming)
    ? incoming
    : `req_${randomUUID().replace(/-/g, '')}`;
}

/** Echoes a sane X-Request-Id or makes one; every response carries it. */
export function requestIdMiddleware(): RequestHandler {
  return (req, res, next) => {
    const id = requestIdFor(req.headers['x-request-id']);
    req.requestId = id;
    res.setHeader('X-Request-Id', id);
    next();
  };
}

export const INVALID_UTF8 = 'Request body is not valid UTF-8';
/** Member names that reach an object's prototype when copied or merged (SPEC §11): refused anywhere in a body. */
const FORBIDDEN_MEMBER_NAMES = new Set(['__proto__', 'constructor', 'prototype']);
// fatal: a byte sequence that is not UTF-8 throws instead of becoming U+FFFD (and being signed as such).
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Throws 400 when the bytes are not valid UTF-8. */
export function assertUtf8(raw: Uint8Array): void {
  decodeUtf8(raw);
}

/** The text of a body, without a leading BOM; 400 when it is not valid UTF-8. */
export function decodeUtf8(raw: Uint8Array): string {
  try {
    return utf8.decode(raw);
  } catch {
    throw badRequest(INVALID_UTF8);
  }
}

/** Throws 400 when a parsed JSON value has `__proto__`, `constructor` or `prototype` as a member name at any depth. */
export function assertNoForbiddenMembers(value: unknown): void {
  // An explicit stack, not recursion: a body may nest thousands of levels deep (within 64 KiB).
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const node = pending.pop();
    if (typeof node !== 'object' || node === null) continue;
    if (Array.isArray(node)) {
      for (const item of node) pending.push(item);
      continue;
    }
    // JSON.parse makes `__proto__` an own member, so Object.keys sees it.
    for (const key of Object.keys(node)) {
      if (FORBIDDEN_MEMBER_NAMES.has(key)) throw badRequest(`${key} is not allowed as a member name`);
      pending.push((node as Record<string, unknown>)[key]);
    }
  }
}

/**
 * A raw JSON body as every parser of the project reads it: valid UTF-8 (400 otherwise), an
 * optional BOM, JSON (400 "Malformed JSON body"), no forbidden member name (400); empty → undefined.
 */
export function parseJsonBody(raw: Uint8Array): unknown {
  const text = decodeUtf8(raw);
  if (text.length === 0) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest('Malformed JSON body');
  }
  assertNoForbiddenMembers(value);
  return value;
}

/** JSON bodies only, 64 KiB at most; a body with another content type is a 400, not silently ignored. */
export function jsonBody(): RequestHandler[] {
  const parse = express.json({
    limit: BODY_LIMIT_BYTES,
    strict: false,
    type: () => true,
    // Checked on the raw (inflated) bytes, before body-parser decodes them leniently.
    verify: (_req, _res, buf) => assertUtf8(buf),
  });
  return [
    (req, _res, next) => {
      if (!hasBody(req)) return next();
      const type = req.header('content-type') ?? '';
      if (!/^application\/([a-z0-9.+-]*\+)?json\b/i.test(type)) {
        return next(badRequest('Content-Type must be application/json'));
      }
      next();
    },
    (req, res, next) => (hasBody(req) ? parse(req, res, next) : next()),
    (req, _res, next) => {
      try {
        assertNoForbiddenMembers(req.body);
        next();
      } catch (err) {
        next(err);
      }
    },
  ];
}

function hasBody(req: Request): boolean {
  const length = req.header('content-length');
  return (length !== undefined && length !== '0') || req.header('transfer-encoding') !== undefined;
}

export function sendError(
  res: Response,
  status: number,
  envelope: ErrorEnvelope,
  headers: Record<string, string> = {},
) {
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.status(status).json(envelope);
}

/** Maps everything thrown to the envelope. Unknown errors are logged with the request id and answered 500. */
export function errorMiddleware(logger: Logger) {
  // express recognises error handlers by their four parameters.
  return (err: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (res.headersSent) {
      logger.error({ err, requestId: req.requestId }, 'error after response started');
      return;
    }
    if (err instanceof AppError) return sendError(res, err.status, err.toEnvelope(), err.headers);
    if (err instanceof z.ZodError)
      return sendError(res, 400, { error: 'BAD_REQUEST', message: describeZodError(err) });
    const bodyParserError = err as { type?: string; status?: number };
    if (bodyParserError?.type === 'entity.too.large') {
      return sendError(res, 413, {
        error: 'PAYLOAD_TOO_LARGE',
        message: `Request body exceeds ${BODY_LIMIT_BYTES} bytes`,
      });
    }
    if (bodyParserError?.type === 'entity.parse.failed') {
      return sendError(res, 400, { error: 'BAD_REQUEST', message: 'Malformed JSON body' });
    }
    if (bodyParserError?.type && bodyParserError.status && bodyParserError.status < 500) {
      return sendError(res, 400, { error: 'BAD_REQUEST', message: 'Unreadable request body' });
    }
    logger.error({ err, requestId: req.requestId, method: req.method, path: req.path }, 'unhandled error');
    sendError(res, 500, {
      error: 'INTERNAL_ERROR',
      message: `Internal error (request ${req.requestId ?? 'unknown'})`,
    });
  };
}

export function notFoundHandler(): RequestHandler {
  return (_req, res) => sendError(res, 404, { error: 'NOT_FOUND', message: 'Route not found' });
}

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/**
 * Registers the handlers of one path and answers 405 for every other method, so a known path
 * never falls through to a 404.
 */
export function route(router: Router, path: string, handlers: Partial<Record<Method, RequestHandler>>) {
  const allowed = Object.keys(handlers).map((m) => m.toUpperCase());
  for (const [method, handler] of Object.entries(handlers) as [Method, RequestHandler][]) {
    router[method](path, handler);
  }
  router.all(path, (_req: Request, res: Response) => {
    res.setHeader('Allow', allowed.join(', '));
    sendError(res, 405, {
      error: 'METHOD_NOT_ALLOWED',
      message: `Method not allowed; use ${allowed.join(', ')}`,
    });
  });
}

export type ReadinessCheck = () => Promise<Record<string, string>>;

/**
 * /healthz says the process is alive; /readyz runs the service's dependency checks; /metrics is
 * the process's Prometheus text. All three are on the service's own port only (the gateway routes
 * none of them) and need no token, like the probes that read them.
 */
export function healthRoutes(app: Express, readiness: ReadinessCheck) {
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/metrics', (_req, res) => serveMetrics(res));
  app.get('/readyz', async (_req, res) => {
    try {
      const checks = await readiness();
      const ready = Object.values(checks).every((v) => v === 'ok' || v.startsWith('degraded'));
      res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not_ready', checks });
    } catch (err) {
      res.status(503).json({ status: 'not_ready', checks: { error: String(err) } });
    }
  });
}

/** The shared start of every service's express app; with `service`, its requests are counted in /metrics. */
export function baseApp(service?: string): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  if (service) app.use(httpMetricsMiddleware(service));
  app.use(requestIdMiddleware());
  // listen() sets it too; this covers an app served by anything else (supertest, an embedding server).
  app.use((_req, res, next) => {
    res.setHeader(NOSNIFF[0], NOSNIFF[1]);
    next();
  });
  return app;
}

/**
 * Counts every answer by the route pattern express matched (`req.baseUrl` + `req.route.path`,
 * read when the answer is finished), never by the raw path, so the label set stays bounded.
 */
export function httpMetricsMiddleware(service: string): RequestHandler {
  const metrics = processMetrics();
  return (req, res, next) => {
    metrics.timeResponse(service, req, res, () => routeLabel(req));
    next();
  };
}

function routeLabel(req: Request): string {
  const path = (req.route as { path?: unknown } | undefined)?.path;
  return typeof path === 'string' ? req.baseUrl + path : '(unmatched)';
}

/** SPEC §11: on every response, so no browser sniffs a JSON error into something executable. */
export const NOSNIFF = ['X-Content-Type-Options', 'nosniff'] as const;
