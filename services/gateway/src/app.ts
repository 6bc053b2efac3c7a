import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import {
  AppError,
  BODY_LIMIT_BYTES,
  CachedTokenMinter,
  baseApp,
  errorMiddleware,
  healthRoutes,
  listen,
  sendError,
  type EventPublisher,
  type InternalTokens,
  type Logger,
  type ReadinessCheck,
  type RunningServer,
  type ServiceClient,
} from '@mandate/shared';
import { authenticate, type JwtAuthenticator, type Principal } from './auth/authenticate';
import type { KeyResolver } from './auth/key-resolver';
import { apiCallEvent } from './audit/api-call';
import { forward } from './http/proxy';
import { clientIp, limitSubject, type RequestLimiter } from './limits';
import type { Idempotency } from './idempotency';
import { RouteMatcher } from './routes/match';
import { ROUTES, type RouteRule, type ServiceName } from './routes/table';

export type Upstreams = Record<Exclude<ServiceName, 'gateway'>, ServiceClient>;

export interface GatewayDeps {
  tokens: InternalTokens;
  logger: Logger;
  publisher: EventPublisher;
  upstreams: Upstreams;
  keys: KeyResolver;
  operatorToken: string;
  jwt?: JwtAuthenticator;
  /** The OpenAPI document, built once from the services' zod schemas. */
  openApiDocument: () => unknown;
  readiness?: ReadinessCheck;
  routes?: RouteRule[];
  /** Rate limits and quotas (SPEC §6); absent = unlimited (unit tests that are not about limits). */
  limiter?: RequestLimiter;
  /** Whether X-Forwarded-For names the client (a proxy of ours in front), for per-IP limits. */
  trustProxy?: boolean;
  /** Idempotency-Key on POSTs (SPEC §7); absent = keys are ignored (unit tests that are not about it). */
  idempotency?: Idempotency;
}

export function createApp(deps: GatewayDeps) {
  const app: Express = baseApp();
  const matcher = new RouteMatcher(deps.routes ?? ROUTES);
  const readBody = express.raw({ limit: BODY_LIMIT_BYTES, type: () => true });
  let openApiJson: string | undefined;
  const minter = new CachedTokenMinter(deps.tokens);

  const readiness = deps.readiness ?? (async () => ({ gateway: 'ok' }));
  healthRoutes(app, async () => ({ ...(await readiness()), ...deps.limiter?.readiness() }));

  app.use(async (req: Request, res: Response, next: NextFunction) => {
    const started = performance.now();
    const match = matcher.match(req.method, req.path);
    if (match.kind === 'not_found') return sendError(res, 404, { error: 'NOT_FOUND', message: 'Route not found' });
    if (match.kind === 'method_not_allowed') {
      res.setHeader('Allow', match.allowed.join(', '));
      return sendError(res, 405, {
        error: 'METHOD_NOT_ALLOWED',
        message: `Method ${req.method} not allowed; use ${match.allowed.join(', ')}`,
      });
    }
    const { rule, params, path } = match;

    let principal: Principal | null = null;
    // Every authenticated call is audited, whatever its outcome (403, 404 and 5xx included).
    res.once('finish', () => {
      if (!principal) return;
      const event = apiCallEvent({
        principal,
        requestId: req.requestId!,
        method: req.method,
        route: rule.path,
        path,
        status: res.statusCode,
        durationMs: performance.now() - started,
      });
      deps.publisher.publish([event]).catch((err) => deps.logger.error({ err, eventId: event.id }, 'API_CALL event not published'));
    });

    try {
      principal = await authenticate(req, rule, params, deps);
      // One limiter call per request, after authentication (rejected credentials cost no budget).
      const subject = deps.limiter && limitSubject(rule, principal, () => clientIp(req.socket.remoteAddress, req.header('x-forwarded-for'), deps.trustProxy ?? false));
      if (subject) {
        const decision = await deps.limiter!.check(subject, rule.limit);
        for (const [name, value] of Object.entries(decision.headers)) res.setHeader(name, value);
        if (!decision.allowed) throw new AppError('TOO_MANY_REQUESTS', decision.message!);
      }
      if (rule.service === 'gateway') {
        openApiJson ??= JSON.stringify(deps.openApiDocument());
        res.type('application/json').send(openApiJson);
        return;
      }
      await readRawBody(req, res, readBody);
      // SPEC §7: only a POST carrying Idempotency-Key reaches the store; true = answered (a replay).
      if (deps.idempotency && req.headers['idempotency-key'] !== undefined && (await deps.idempotency.apply(req, res, path, principal))) return;
      // One token per caller, reused for a few seconds; the request id travels in X-Request-Id.
      const token = await minter.mint({
        tenantId: principal?.tenantId ?? null,
        actor: principal?.actor ?? { type: 'system' },
        permissions: principal?.permissions ?? [],
      });
      await forward(req, res, deps.upstreams[rule.service], rule.service, path, token);
    } catch (err) {
      next(err);
    }
  });

  app.use(errorMiddleware(deps.logger));

  let server: RunningServer | undefined;
  return {
    app,
    async start(port = 0, host = '127.0.0.1'): Promise<RunningServer> {
      server = await listen(app, port, host);
      return server;
    },
    async stop(): Promise<void> {
      await server?.close();
      server = undefined;
    },
  };
}

export type GatewayApp = ReturnType<typeof createApp>;

/**
 * Sets req.body to the raw body Buffer. A plain body of a known length within the limit is read
 * directly (the common case, and most of the hot path's body-parser cost); anything else — a
 * compressed or chunked body, a missing or oversized length — goes through express.raw, which
 * inflates it or answers 413.
 */
function readRawBody(req: Request, res: Response, fallback: ReturnType<typeof express.raw>): Promise<void> {
  const { headers } = req;
  const length = Number(headers['content-length']);
  if (
    headers['transfer-encoding'] !== undefined ||
    headers['content-encoding'] !== undefined ||
    !(length >= 0 && length <= BODY_LIMIT_BYTES)
  ) {
    return new Promise<void>((resolve, reject) => fallback(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
  }
  return new Promise<void>((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => {
      req.body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      resolve();
    });
    req.once('error', (err) => reject(Object.assign(err, { type: 'request.aborted', status: 400 })));
  });
}
