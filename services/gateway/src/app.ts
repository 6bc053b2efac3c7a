import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import express, { type NextFunction } from 'express';
import {
  AppError,
  BODY_LIMIT_BYTES,
  CachedTokenMinter,
  answerError,
  listen,
  markRequest,
  processMetrics,
  readPlainBody,
  requestIdFor,
  sendEnvelope,
  secretMembersOf,
  sendJson,
  serviceUnavailable,
  serveMetrics,
  setRequestRoute,
  setSpanAttributes,
  traceRequest,
  unauthorized,
  type EventPublisher,
  type InternalTokens,
  type Logger,
  type ReadinessCheck,
  type RunningServer,
  type ServiceClient,
} from '@mandate/shared';
import {
  authenticate,
  credentialKind,
  sameSecret,
  header,
  type JwtAuthenticator,
  type Principal,
} from './auth/authenticate';
import type { KeyResolver } from './auth/key-resolver';
import { RecentCredentials } from './auth/recent-credentials';
import { apiCallEvent } from './audit/api-call';
import { forward } from './http/proxy';
import { clientIp, limitSubject, type RequestLimiter } from './limits';
import type { Idempotency } from './idempotency';
import { RouteMatcher } from './routes/match';
import type { DevSignIn } from './dashboard/dev-sign-in';
import { DEV_PREFIX } from './dashboard/dev-sign-in';
import { dashboardHandler, isDashboardPath, type DashboardOidc } from './dashboard/static';
import { whoAmI } from './dashboard/me';
import { ROUTES, type RouteRule, type ServiceName } from './routes/table';

/** The public surface (every route the gateway answers or forwards) and its own routes: what the client library is generated from. */
export { CONTRACTS, gatewayContract } from './routes/table';

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
  /** One `info` line per request (ACCESS_LOG); absent = none. */
  accessLog?: boolean;
  /** The dashboard's static build (served at /dashboard/) and, in embedded mode, its development sign-in. */
  dashboard?: { dir: string; devSignIn?: DevSignIn; oidc?: DashboardOidc; walletSignIn?: boolean };
}

/**
 * The gateway is one plain node:http handler (no express on the request path: its router, req/res
 * decoration and body parser were most of the gateway's CPU per call). The path is read by
 * express's own `req.path` (parseurl, cached on the request), so every URL — a `#`, whitespace or
 * an absolute form included — gets the path express gave it.
 */
export function createApp(deps: GatewayDeps) {
  const handle = gatewayHandler(deps);

  const listener: RequestListener = (req, res) => {
    const requestId = requestIdFor(req.headers['x-request-id']);
    markRequest(requestId, 'gw.in');
    res.setHeader('X-Request-Id', requestId);
    // The trace starts here, from the client's traceparent when it sent one (a no-op unless tracing is on).
    void traceRequest(req, res, () => handle(req, res, expressPath.call(req) ?? '', requestId));
  };

  let server: RunningServer | undefined;
  return {
    app: listener,
    async start(port = 0, host = '127.0.0.1'): Promise<RunningServer> {
      server = await listen(listener, port, host);
      return server;
    },
    async stop(): Promise<void> {
      await server?.close();
      server = undefined;
    },
  };
}

export type GatewayApp = ReturnType<typeof createApp>;

/** express's `req.path` getter (parseurl's pathname), applied to node's request. */
const expressPath = Object.getOwnPropertyDescriptor(express.request, 'path')!.get! as (
  this: IncomingMessage,
) => string | null | undefined;

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

/** The credential a request carries, as sent (Authorization wins, as readCredential reads it); undefined: none. */
function presentedCredential(req: IncomingMessage): string | undefined {
  const authorization = header(req, 'authorization');
  if (authorization !== undefined) return `authorization ${authorization}`;
  const apiKey = header(req, 'x-api-key');
  return apiKey === undefined ? undefined : `x-api-key ${apiKey}`;
}

/** The digest RecentCredentials knows a request's credential by, computed once per request. */
function credentialDigest(req: IncomingMessage): string | undefined {
  const credential = presentedCredential(req);
  return credential === undefined ? undefined : RecentCredentials.digest(credential);
}

/** /healthz and /readyz as express routed them: any case, an optional trailing slash, GET or HEAD. */
function healthRoute(method: string | undefined, path: string): 'healthz' | 'readyz' | undefined {
  if ((method !== 'GET' && method !== 'HEAD') || path.length > 8) return undefined;
  const p = path.toLowerCase();
  if (p === '/healthz' || p === '/healthz/') return 'healthz';
  if (p === '/readyz' || p === '/readyz/') return 'readyz';
  return undefined;
}

/**
 * The status a call ended with, for the metrics, the access log and the API_CALL of an answer that
 * never ended: as sent once the answer finished; 499 (nginx's "client closed request") when the
 * client left before that; the 5xx the proxy set when the upstream broke off its answer (forward).
 */
const endedStatus = (res: ServerResponse) =>
  res.writableFinished || res.statusCode >= 500 ? res.statusCode : 499;

export const TOO_MANY_AUTH_FAILURES = 'Too many failed authentications from this address; retry later';
const tooManyAuthFailures = (seconds: number) =>
  new AppError('TOO_MANY_REQUESTS', TOO_MANY_AUTH_FAILURES, { 'Retry-After': String(seconds) });

/** The route handler of every request: health, 404/405, auth, limits, body, idempotency, forwarding. */
function gatewayHandler(deps: GatewayDeps) {
  const matcher = new RouteMatcher(deps.routes ?? ROUTES);
  // Compressed, chunked or oversized bodies: body-parser inflates them or answers 413.
  const readBodyFallback = express.raw({ limit: BODY_LIMIT_BYTES, type: () => true });
  let openApiJson: string | undefined;
  const minter = new CachedTokenMinter(deps.tokens);
  /** GET /v1/usage: the limiter's own counters (a gateway without one counts nothing). */
  const usageOf = async (principal: Principal) => {
    if (!deps.limiter?.usage)
      throw serviceUnavailable('Usage is not counted: the gateway has no rate limiter');
    return deps.limiter.usage(principal.tenantId!, principal.plan ?? 'beta');
  };
  const readiness = deps.readiness ?? (async () => ({ gateway: 'ok' }));

  async function ready(res: ServerResponse) {
    try {
      const checks = { ...(await readiness()), ...deps.limiter?.readiness() };
      const ok = Object.values(checks).every((v) => v === 'ok' || v.startsWith('degraded'));
      sendJson(res, ok ? 200 : 503, JSON.stringify({ status: ok ? 'ready' : 'not_ready', checks }));
    } catch (err) {
      sendJson(res, 503, JSON.stringify({ status: 'not_ready', checks: { error: String(err) } }));
    }
  }

  /**
   * The raw body: a plain body of a known length within the limit is read directly (the common
   * case); a compressed or chunked body, or one whose length is over the limit, goes through
   * express.raw (inflate, 413). No length and no transfer encoding: no body.
   */
  function readBody(req: IncomingMessage, res: ServerResponse): Promise<Buffer | undefined> {
    const { headers } = req;
    const rawLength = headers['content-length'];
    const length = Number(rawLength);
    if (headers['transfer-encoding'] === undefined && headers['content-encoding'] === undefined) {
      if (rawLength === undefined) return Promise.resolve(undefined);
      if (length >= 0 && length <= BODY_LIMIT_BYTES) return readPlainBody(req);
    }
    const r = req as IncomingMessage & { body?: unknown };
    return new Promise((resolve, reject) =>
      readBodyFallback(
        r as never,
        res as never,
        ((err?: unknown) =>
          err ? reject(err) : resolve(Buffer.isBuffer(r.body) ? r.body : undefined)) as NextFunction,
      ),
    );
  }

  /**
   * Logs a failed authentication (SPEC §11: client IP, request id, the kind of credential and the
   * reason, never the credential) and counts it against the client IP; over the limit the answer
   * is 429 instead of the 401.
   */
  async function authFailed(
    req: IncomingMessage,
    route: string,
    requestId: string,
    ip: string,
    err: AppError,
  ): Promise<AppError> {
    deps.logger.warn(
      {
        ip,
        requestId,
        method: req.method,
        route,
        credential: credentialKind(req),
        reason: err.message,
      },
      'authentication failed',
    );
    const wait = (await deps.limiter?.authFailed?.(ip)) ?? 0;
    return wait > 0 ? tooManyAuthFailures(wait) : err;
  }
  // Decided once: with LOG_LEVEL above info (the benchmark), requests pay nothing for it.
  const accessLog = deps.accessLog === true && deps.logger.isLevelEnabled('info');
  const metrics = processMetrics();
  const dashboard =
    deps.dashboard &&
    dashboardHandler(deps.dashboard.dir, {
      devSignIn: !!deps.dashboard.devSignIn,
      oidc: deps.dashboard.oidc,
      walletSignIn: deps.dashboard.walletSignIn,
    });
  const devSignIn = deps.dashboard?.devSignIn;
  const recent = new RecentCredentials();
  const clientIpOf = (req: IncomingMessage) =>
    clientIp(req.socket.remoteAddress, header(req, 'x-forwarded-for'), deps.trustProxy ?? false);

  /** /metrics with a credential: the operator token serves it; anything else is a failed authentication. */
  async function metricsScrape(req: IncomingMessage, res: ServerResponse, requestId: string) {
    try {
      const ip = clientIpOf(req);
      // The operator token is never a recent credential (see below): a blocked address is refused first.
      const wait = deps.limiter?.authBlocked?.(ip) ?? 0;
      if (wait > 0) throw tooManyAuthFailures(wait);
      if (isOperatorBearer(req, deps.operatorToken)) return serveMetrics(res);
      throw await authFailed(req, '/metrics', requestId, ip, unauthorized('Invalid operator credentials'));
    } catch (err) {
      answerError(res, err, deps.logger, { requestId, method: req.method, path: '/metrics' });
    }
  }

  return async function handle(
    req: IncomingMessage,
    res: ServerResponse,
    rawPath: string,
    requestId: string,
  ): Promise<void> {
    const started = performance.now();
    const health = healthRoute(req.method, rawPath);
    if (health === 'healthz') return sendJson(res, 200, '{"status":"ok"}');
    if (health === 'readyz') return ready(res);
    if (isMetricsScrape(req, rawPath) && presentedCredential(req) !== undefined)
      return metricsScrape(req, res, requestId);
    // Static files, outside the API: no credential, no route table (README, "Dashboard").
    if (dashboard && isDashboardPath(rawPath)) return dashboard(req, res);
    if (devSignIn && rawPath.startsWith(`${DEV_PREFIX}/`)) {
      const q = req.url!.indexOf('?');
      return devSignIn.handle(req, res, rawPath, q < 0 ? '' : req.url!.slice(q + 1));
    }

    let principal: Principal | null = null;
    let routePattern: string | null = null;
    // Labelled by the matched route pattern; a path no route matches is one label, not one per path.
    // On 'close', not 'finish': an answer that never finished (a streamed one cut off) counts too.
    res.once('close', () =>
      metrics.observeHttp(
        'gateway',
        req.method ?? '',
        routePattern ?? '(unmatched)',
        endedStatus(res),
        (performance.now() - started) / 1000,
      ),
    );
    if (accessLog) {
      res.once('close', () =>
        deps.logger.info(
          accessLogLine(req.method, routePattern, endedStatus(res), started, requestId, principal),
          'request',
        ),
      );
    }

    const match = matcher.match(req.method ?? '', rawPath);
    if (match.kind === 'not_found')
      return sendEnvelope(res, 404, { error: 'NOT_FOUND', message: 'Route not found' });
    if (match.kind === 'method_not_allowed') {
      return sendEnvelope(
        res,
        405,
        {
          error: 'METHOD_NOT_ALLOWED',
          message: `Method ${req.method} not allowed; use ${match.allowed.join(', ')}`,
        },
        { Allow: match.allowed.join(', ') },
      );
    }
    const { rule, params, path } = match;
    routePattern = rule.path;
    setRequestRoute(req.method, rule.path);
    // Every authenticated call is audited, whatever its outcome (403, 404, 5xx and cut-off answers included).
    let audited = false;
    const audit = (status: number) => {
      if (audited || !principal) return;
      audited = true;
      const event = apiCallEvent({
        principal,
        requestId,
        method: req.method!,
        route: rule.path,
        path,
        status,
        durationMs: performance.now() - started,
      });
      deps.publisher
        .publish([event])
        .catch((err) => deps.logger.error({ err, eventId: event.id }, 'API_CALL event not published'));
    };
    // Handed to the publisher (which journals it at once) before the answer's last bytes go out: a
    // client that read a whole answer can count on its API_CALL even if this process is killed then.
    const end = res.end;
    res.end = function (this: ServerResponse, ...args: unknown[]) {
      audit(res.statusCode);
      return (end as (...a: unknown[]) => ServerResponse).apply(this, args);
    } as ServerResponse['end'];
    // An answer that never ended: the client left (499), or the upstream broke it off.
    res.once('close', () => audit(endedStatus(res)));

    const ip = () => clientIpOf(req);
    try {
      const credential = rule.auth === 'public' ? undefined : credentialDigest(req);
      // An address over its failed-authentication limit is refused on every authenticated route
      // until its minute passes, before any lookup: only a credential that authenticated in the
      // last 10 minutes still goes on to authentication, so one stale key behind a shared address
      // (a NAT) does not lock out the others (docs/DECISIONS.md).
      if (rule.auth !== 'public' && !(credential !== undefined && recent.has(credential))) {
        const wait = deps.limiter?.authBlocked?.(ip()) ?? 0;
        if (wait > 0) throw tooManyAuthFailures(wait);
      }
      try {
        principal = await authenticate(req, rule, params, deps);
        markRequest(requestId, 'gw.auth');
        if (principal?.tenantId) setSpanAttributes({ 'mandate.tenant_id': principal.tenantId });
      } catch (err) {
        if (err instanceof AppError && err.status === 401) {
          // A remembered credential that fails now (revoked, expired) loses its pass at once.
          if (credential !== undefined) recent.forget(credential);
          throw await authFailed(req, rule.path, requestId, ip(), err);
        }
        throw err;
      }
      // The operator token is chosen by a person and may be guessable: it never skips the limit.
      if (credential !== undefined && principal !== null && principal.actor.type !== 'operator')
        recent.remember(credential);
      // One limiter call per request, after authentication (rejected credentials cost no budget).
      const subject = deps.limiter && limitSubject(rule, principal, ip);
      if (subject) {
        const decision = await deps.limiter!.check(subject, rule.limit);
        for (const name in decision.headers) res.setHeader(name, decision.headers[name]!);
        if (!decision.allowed) throw new AppError('TOO_MANY_REQUESTS', decision.message!);
        markRequest(requestId, 'gw.limit');
      }
      if (rule.service === 'gateway') {
        if (rule.path === '/v1/me') return sendJson(res, 200, JSON.stringify(whoAmI(principal!)));
        if (rule.path === '/v1/usage') return sendJson(res, 200, JSON.stringify(await usageOf(principal!)));
        openApiJson ??= JSON.stringify(deps.openApiDocument());
        return sendJson(res, 200, openApiJson);
      }
      const body = await readBody(req, res);
      markRequest(requestId, 'gw.body');
      // An Idempotency-Key POST is answered in one piece: the capture stores the body it ends with.
      const buffered =
        deps.idempotency !== undefined &&
        req.method === 'POST' &&
        req.headers['idempotency-key'] !== undefined;
      const call = { path, body, requestId, secrets: secretMembersOf(rule), buffered };
      // SPEC §7: only a POST carrying Idempotency-Key reaches the store; true = answered (a replay).
      if (
        deps.idempotency &&
        req.headers['idempotency-key'] !== undefined &&
        (await deps.idempotency.apply(req, res, call, principal))
      )
        return;
      // One token per caller, reused for a few seconds; the request id travels in X-Request-Id.
      const token = await minter.mint(
        {
          tenantId: principal?.tenantId ?? null,
          actor: principal?.actor ?? { type: 'system' },
          permissions: principal?.permissions ?? [],
        },
        rule.service,
      );
      markRequest(requestId, 'gw.forward');
      await forward(req, res, deps.upstreams[rule.service], rule.service, path, token, call, deps.logger);
      markRequest(requestId, 'gw.done');
    } catch (err) {
      answerError(res, err, deps.logger, { requestId, method: req.method, path });
    }
  };
}

/**
 * The access log's fields: who called what and how it went. The caller is named by tenant and key
 * id or subject, never by its credential (the Authorization / X-Api-Key value is not read here).
 */
export function accessLogLine(
  method: string | undefined,
  route: string | null,
  status: number,
  started: number,
  requestId: string,
  principal: Principal | null,
) {
  return {
    method,
    route: route ?? '(no route)',
    status,
    ms: Math.round((performance.now() - started) * 10) / 10,
    request_id: requestId,
    tenant: principal?.tenantId ?? null,
    ...(principal?.actor.key_id ? { key_id: principal.actor.key_id } : {}),
    ...(principal?.actor.subject_id ? { subject: principal.actor.subject_id } : {}),
    ...(principal?.actor.type === 'operator' ? { caller: 'operator' } : {}),
  };
}
