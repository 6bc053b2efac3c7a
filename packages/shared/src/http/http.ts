import express, {
  type ErrorRequestHandler,
  type Express,
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
  type Router,
} from 'express';
import { unauthorized, type ErrorEnvelope } from '../core/errors';
import type { CallerContext, InternalService, InternalTokens } from '../core/internal-token';
import type { Logger } from '../observability/logger';
import { boundedChecks, LivenessTracker } from '../core/liveness';
import { processMetrics, serveMetrics } from '../observability/metrics';
import { traceRequest, tracingEnabled } from '../observability/tracing';
import {
  BODY_LIMIT_BYTES,
  answerError,
  assertJsonContentType,
  assertMemberNames,
  assertNoForbiddenMembers,
  assertUtf8,
  callerOfHeaders,
  hasBody,
  requestIdFor,
  sendEnvelope,
  tenantOfCaller,
} from './pipeline';

declare module 'express-serve-static-core' {
  interface Request {
    caller?: CallerContext;
    requestId?: string;
  }
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

/**
 * Every service route sits behind this: no valid internal token for `audience` (the service's own
 * name) → 401, whatever else the request carries (the pipeline's callerOfHeaders).
 */
export function requireInternalToken(
  tokens: InternalTokens,
  audience: InternalService | readonly InternalService[],
): RequestHandler {
  return async (req, _res, next) => {
    let caller: CallerContext;
    try {
      caller = await callerOfHeaders(tokens, audience, req.headers);
    } catch (err) {
      return next(err);
    }
    req.caller = caller;
    next();
  };
}

/** The caller context of a request that passed requireInternalToken. */
export function callerOf(req: Request): CallerContext {
  if (!req.caller) throw unauthorized('Missing internal token');
  return req.caller;
}

/** The tenant of a tenant-scoped request; platform calls without one are refused. */
export function tenantOf(req: Request): string {
  return tenantOfCaller(callerOf(req));
}

/** JSON bodies only, 64 KiB at most; a body with another content type is a 400, not silently ignored. */
export function jsonBody(): RequestHandler[] {
  const parse = express.json({
    limit: BODY_LIMIT_BYTES,
    strict: false,
    type: () => true,
    // Checked on the raw (inflated) bytes, before body-parser decodes them leniently; kept for the
    // member check, which compares the text with what it parsed into.
    verify: (req, _res, buf) => {
      assertUtf8(buf);
      (req as RawJsonRequest)[RAW_JSON] = buf;
    },
  });
  return [
    checking((req) => assertJsonContentType(req.headers)),
    (req, res, next) => (hasBody(req.headers) ? parse(req, res, next) : next()),
    checking((req) => {
      const raw = (req as RawJsonRequest)[RAW_JSON];
      if (raw) assertMemberNames(req.body, raw);
      else assertNoForbiddenMembers(req.body);
    }),
  ];
}

/** Where jsonBody keeps the bytes it parsed, for the member check that follows the parse. */
const RAW_JSON = Symbol('raw JSON body');
type RawJsonRequest = Request & { [RAW_JSON]?: Buffer };

/** A synchronous check of the request as middleware: what it throws goes on to the error handler. */
function checking(check: (req: Request) => void): RequestHandler {
  return (req, _res, next) => {
    try {
      check(req);
      next();
    } catch (err) {
      next(err);
    }
  };
}

export function sendError(
  res: Response,
  status: number,
  envelope: ErrorEnvelope,
  headers: Record<string, string> = {},
) {
  sendEnvelope(res, status, envelope, headers);
}

/** Maps everything thrown to the envelope (the pipeline's errorReply); unknown errors are logged with the request id and answered 500. */
export function errorMiddleware(logger: Logger) {
  // express recognises error handlers by their four parameters.
  return (err: unknown, req: Request, res: Response, _next: NextFunction) =>
    answerError(res, err, logger, { requestId: req.requestId, method: req.method, path: req.path });
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
 * /healthz says the process is alive; /readyz runs the service's dependency checks; /livez fails
 * only when one of them has been down longer than LIVENESS_FAIL_AFTER_MS (liveness.ts); /metrics is
 * the process's Prometheus text. All four are on the service's own port only (the gateway routes
 * none of them) and need no token, like the probes that read them.
 */
export function healthRoutes(app: Express, readiness: ReadinessCheck) {
  const liveness = new LivenessTracker();
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/livez', async (_req, res) => {
    const { status, body } = liveness.answer(await boundedChecks(readiness));
    res.status(status).json(body);
  });
  app.get('/metrics', (_req, res) => serveMetrics(res));
  app.get('/readyz', async (_req, res) => {
    try {
      const checks = await readiness();
      liveness.observe(checks);
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
  // A server span per request, child of the caller's traceparent; tracing starts before the app is made, off it costs nothing.
  if (service && tracingEnabled())
    app.use((req, res, next) => traceRequest(req, res, next, () => routeLabel(req)));
  app.use(requestIdMiddleware());
  // listen() sets it too; this covers an app served by anything else (supertest, an embedding server).
  app.use((_req, res, next) => {
    res.setHeader(NOSNIFF[0], NOSNIFF[1]);
    next();
  });
  return app;
}

/**
 * The express app of a service behind the gateway: baseApp, /healthz, /readyz and /metrics, the
 * internal token on everything else, any handler that reads its own body, JSON bodies, the service's
 * handlers in order, then 404 and
 * the error envelope.
 */
export function internalServiceApp(
  service: InternalService,
  o: {
    readiness: ReadinessCheck;
    tokens: InternalTokens;
    logger: Logger;
    /** Handlers that read their own body (a form post), mounted before the JSON-only parser. */
    beforeJson?: RequestHandler[];
    handlers: (RequestHandler | ErrorRequestHandler)[];
  },
): Express {
  const app = baseApp(service);
  healthRoutes(app, o.readiness);
  app.use(requireInternalToken(o.tokens, service));
  for (const handler of o.beforeJson ?? []) app.use(handler);
  app.use(jsonBody());
  for (const handler of o.handlers) app.use(handler);
  app.use(notFoundHandler());
  app.use(errorMiddleware(o.logger));
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

/** docs/API.md, "Hardening": on every response, so no browser sniffs a JSON error into something executable. */
export const NOSNIFF = ['X-Content-Type-Options', 'nosniff'] as const;
