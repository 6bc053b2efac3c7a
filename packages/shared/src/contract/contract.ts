import { z } from 'zod';
import { pageSchema } from './pagination';

/**
 * The public contract of a route, declared once by the service that owns it: the gateway's route
 * table (authentication, scope, limits, 404/405), the service's handler (input parsing, the type
 * of what it answers) and `/v1/openapi.json` are all built from it.
 */

export const API_KEY_SCOPES = [
  'mandates:read',
  'mandates:write',
  'verify',
  'events:read',
  'tenants:admin',
] as const;
export type Scope = (typeof API_KEY_SCOPES)[number];

export type ServiceName = 'mandates' | 'verify' | 'identity' | 'audit' | 'gateway';
export type AuthMode = 'tenant' | 'operator' | 'public';
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * The named per-endpoint rate-limit buckets: each plan sizes the first four; the public routes'
 * buckets are per client IP (`onboarding` for sign-ups and the wallet, `public_reads` for the
 * JWKS and the status lists relying parties fetch).
 */
export const LIMIT_BUCKETS = [
  'mandates.create',
  'mandates.lifecycle',
  'apikeys.create',
  'evidence.export',
  'onboarding',
  'public_reads',
] as const;
export type LimitBucket = (typeof LIMIT_BUCKETS)[number];

/** What the gateway needs of a route: the part of a contract its table is made of. */
export interface RouteRule {
  method: Method;
  /** Always the /v1 form; unversioned paths are aliases. `:name` segments are parameters. */
  path: string;
  service: ServiceName;
  auth: AuthMode;
  /** Scope an API key needs. */
  scope?: Scope;
  /** Scopes an API key may hold instead of `scope` (any one suffices); defaults to the scope. */
  scopes?: readonly Scope[];
  /** Alternatives a JWT caller may hold instead (any one suffices); defaults to the scope. */
  permissions?: readonly string[];
  /** Named per-endpoint rate limit bucket, if any. */
  limit?: LimitBucket;
  /**
   * How many requests one call counts as in the limits (buckets and quota); absent: one.
   * `evaluations`: one per item of an AuthZEN batch (docs/API.md#authzen), read from the body.
   */
  limitCost?: 'evaluations';
  /**
   * The members of this route's answers that hold a secret (shown once), beyond the gateway's
   * SECRET_MEMBER_NAMES: an Idempotency-Key replay never carries them (the gateway stores the answer
   * without them). Name every secret the route returns, so the document says it.
   */
  secrets?: readonly string[];
  /**
   * false: an Idempotency-Key never replays this route's answer, every call runs (an
   * unauthenticated route that hands out a capability, such as a sign-in session's link: callers
   * behind one address would share one record, docs/API.md#idempotency).
   */
  replay?: false;
}

export interface ResponseContract {
  description: string;
  /** The JSON body; every 2xx a handler answers is checked against it in the tests. */
  schema: z.ZodType;
  /** Response headers the route itself sets (the generic ones are added by the document builder). */
  headers?: Record<string, string>;
}

export interface RequestContract {
  /** Path parameters, one string member per `:name` segment. */
  params?: z.ZodObject;
  query?: z.ZodType;
  body?: z.ZodType;
  /** How the body is documented when `body` preprocesses (invisible to the OpenAPI generator). */
  bodyDoc?: z.ZodType;
  /** False: an absent body reads as `{}`. Defaults to true when there is a body. */
  bodyRequired?: boolean;
}

export interface RouteContract extends RouteRule {
  operationId: string;
  summary: string;
  description?: string;
  tags?: readonly string[];
  request?: RequestContract;
  /** The success answers by status. */
  responses: Readonly<Record<number, ResponseContract>>;
  /**
   * Error statuses particular to this route, with what they mean here. The generic ones (400, 401,
   * 403, 404, 409, 413, 429, 503) are derived from the route's other properties.
   */
  errors?: Readonly<Partial<Record<number, string>>>;
}

/**
 * What a handler and a caller need of a route, public or internal: where it is, what it takes and
 * what it answers. `implement` serves it, `ContractClient` calls it.
 */
export interface RouteShape {
  operationId: string;
  method: Method;
  path: string;
  service: ServiceName;
  request?: RequestContract;
  responses: Readonly<Record<number, ResponseContract>>;
}

/**
 * A service-to-service route (`/internal/v1/...`), declared by the service that answers it and
 * called through `ContractClient`: always behind the internal token (every service route is), never
 * in the gateway's table nor in the public document — it has no `auth` or `scope`, so no
 * `RouteContract` list (the table, the document) can hold it.
 */
export interface InternalRouteContract extends RouteShape {
  path: `/internal/v1/${string}`;
  internal: true;
  summary: string;
  /** A POST that changes nothing (a lookup, a signature): retried on failure like a GET. */
  idempotent?: boolean;
  /** Its error statuses the caller acts on, with what they mean. */
  errors?: Readonly<Partial<Record<number, string>>>;
}

/** Declares a service's internal routes by name, as `defineRoutes` does (the key is the operationId). */
export function defineInternalRoutes<
  const R extends Record<string, Omit<InternalRouteContract, 'operationId' | 'internal'>>,
>(routes: R): { [K in keyof R & string]: R[K] & { operationId: K; internal: true } } {
  return Object.fromEntries(
    Object.entries(routes).map(([operationId, route]) => [
      operationId,
      { ...route, operationId, internal: true },
    ]),
  ) as { [K in keyof R & string]: R[K] & { operationId: K; internal: true } };
}

/** A route of a `defineRoutes` map: its key there is its operationId. */
export type UnnamedRoute = Omit<RouteContract, 'operationId'> & { operationId?: never };

/**
 * Declares a service's routes by name: `defineRoutes({ getEvent: {...} })` makes `getEvent` the
 * route's operationId, so the one name the handlers (`routes.getEvent`) and the document use is
 * spelled once. The map keeps its order (the gateway lists the routes in it).
 */
export function defineRoutes<const R extends Record<string, UnnamedRoute>>(
  routes: R,
): { [K in keyof R & string]: R[K] & { operationId: K } } {
  return Object.fromEntries(
    Object.entries(routes).map(([operationId, route]) => [operationId, { ...route, operationId }]),
  ) as { [K in keyof R & string]: R[K] & { operationId: K } };
}

/**
 * A list route's request and answer: its query (listQueryShape and the route's filters) in, one
 * page of the items out (200, `{data, has_more, next_cursor}`).
 */
export const listing = <const Q extends z.ZodType, const T extends z.ZodType>(
  query: Q,
  description: string,
  item: T,
) => ({
  request: { query },
  responses: { 200: { description, schema: pageSchema(item) } },
});

/** What a group of routes may state once for all of them: who owns and calls them, the scope, the tag. */
export type SharedRouteProperties = Partial<
  Pick<RouteContract, 'service' | 'auth' | 'scope' | 'scopes' | 'permissions' | 'limit' | 'tags' | 'replay'>
>;

/** A route of a group: what the group leaves open (it may override the rest), its method and path aside. */
type GroupRoute<S> = Omit<UnnamedRoute, keyof S | 'method' | 'path'> &
  Partial<Omit<UnnamedRoute, 'method' | 'path'>>;

/** The names of a path's `:name` segments. */
type PathParamNames<P extends string> = P extends `${string}:${infer Name}/${infer Rest}`
  ? Name | PathParamNames<Rest>
  : P extends `${string}:${infer Name}`
    ? Name
    : never;

/** A path's params: one string per `:name` segment. */
export type PathParams<P extends string> = z.ZodObject<{ [K in PathParamNames<P>]: z.ZodString }>;

export function pathParams<const P extends string>(path: P): PathParams<P> {
  const names = [...path.matchAll(/:([A-Za-z0-9_]+)/g)].map((match) => match[1]!);
  return z.object(Object.fromEntries(names.map((name) => [name, z.string()]))) as PathParams<P>;
}

/** A group route's request: its own, with the path's params unless it declares params itself. */
type RequestWithPathParams<C, P extends string> = [PathParamNames<P>] extends [never]
  ? C
  : C extends { request: { params: z.ZodObject } }
    ? C
    : Omit<C, 'request'> & {
        request: (C extends { request: infer R } ? R : unknown) & { params: PathParams<P> };
      };

/**
 * Declares routes that share properties: `const events = routeGroup({ service, auth, scope, tags })`,
 * then `getEvent: events.get('/v1/events/:id', { summary, responses })` in `defineRoutes` is the
 * route with all of it, so each route states only what is its own. A property the route states
 * wins over the group's. The path's `:name` segments are the route's params (strings), unless it
 * declares its own. Literal and schema types are kept as `defineRoutes` keeps them.
 */
export function routeGroup<const S extends SharedRouteProperties>(shared: S) {
  const at =
    <const M extends Method>(method: M) =>
    <const P extends string, const C extends GroupRoute<S>>(path: P, route: C) => {
      const withParams = path.includes(':') && route.request?.params === undefined;
      const request = withParams ? { params: pathParams(path), ...route.request } : route.request;
      const declared = { ...shared, method, path, ...route, ...(request ? { request } : {}) };
      // What the spread holds, which the compiler does not work out for generic objects.
      return declared as unknown as Omit<S, keyof C> & { method: M; path: P } & RequestWithPathParams<C, P>;
    };
  return { get: at('GET'), post: at('POST'), put: at('PUT'), patch: at('PATCH'), delete: at('DELETE') };
}

/** The statuses an error envelope may come with on this route, each with its meaning. */
export function errorStatusesOf(route: RouteContract): Map<number, string> {
  const out = new Map<number, string>();
  const input = route.request?.query !== undefined || route.request?.body !== undefined;
  const authenticated = route.auth !== 'public';
  const forwarded = route.service !== 'gateway';
  if (input || route.auth === 'tenant' || route.method === 'POST')
    out.set(
      400,
      [
        input ? 'Invalid request; the message names the field' : undefined,
        route.auth === 'tenant' ? 'X-Tenant-Id is not a tenant id' : undefined,
        route.method === 'POST' ? 'Idempotency-Key is not 1 to 255 printable ASCII characters' : undefined,
      ]
        .filter(Boolean)
        .join('; '),
    );
  if (authenticated)
    out.set(
      401,
      route.auth === 'operator' ? 'Missing or invalid operator token' : 'Missing or invalid credentials',
    );
  if (route.scope)
    out.set(
      403,
      `The API key lacks scope ${(route.scopes ?? [route.scope]).join(' or ')}, or the JWT subject lacks the permission`,
    );
  if (route.auth === 'tenant' || route.path.includes('/:'))
    out.set(404, 'Not found, or another tenant’s (indistinguishable)');
  if (route.method === 'POST')
    out.set(409, 'The Idempotency-Key was used with another request, or its first request is still running');
  if (route.request?.body !== undefined) out.set(413, 'The body is larger than 64 KiB');
  if (authenticated || route.limit)
    out.set(429, 'Rate limit, monthly quota or failed-authentication limit exceeded; see Retry-After');
  if (forwarded) out.set(503, 'A service this route needs is unavailable; retry later');
  for (const [key, description] of Object.entries(route.errors ?? {})) {
    const status = Number(key);
    const generic = out.get(status);
    // The route's own 404 or 503 says the same as the generic one, more precisely; others add a cause.
    out.set(
      status,
      generic && status !== 404 && status !== 503 ? `${description}; or: ${generic}` : description!,
    );
  }
  return out;
}

/** Whether the gateway sends RateLimit-* headers on this route's answers. */
export const isRateLimited = (route: RouteRule) =>
  route.auth === 'tenant' || (route.auth === 'public' && route.limit !== undefined);

// ── types a handler is checked against ───────────────────────────────────────

type Req<C extends RouteShape> = C['request'] extends RequestContract ? C['request'] : object;
type Out<T> = T extends z.ZodType ? z.output<T> : undefined;

/** The parsed input a handler of the contract receives. */
export interface ContractInput<C extends RouteShape> {
  params: Req<C> extends { params: infer P } ? Out<P> : Record<string, never>;
  query: Req<C> extends { query: infer Q } ? Out<Q> : undefined;
  body: Req<C> extends { body: infer B } ? Out<B> : undefined;
}

/** What a handler of the contract answers: one of its declared statuses with that status's body. */
export type ContractResponse<C extends RouteShape> = ResponseOf<C['responses']>;
type ResponseOf<R> = {
  [S in keyof R]: S extends number
    ? R[S] extends { schema: infer Z extends z.ZodType }
      ? { status: S; body: z.input<Z>; headers?: Record<string, string> }
      : never
    : never;
}[keyof R];

/** What a caller sends: the params, query and body as their schemas take them in. */
export interface ContractCallInput<C extends RouteShape> {
  params: Req<C> extends { params: infer P } ? In<P> : Record<string, never>;
  query: Req<C> extends { query: infer Q } ? In<Q> : undefined;
  body: Req<C> extends { body: infer B } ? In<B> : undefined;
}
type In<T> = T extends z.ZodType ? z.input<T> : undefined;

/** A declared success answer as the caller reads it: that status's body, parsed by its schema. */
export type ContractAnswer<C extends RouteShape> = AnswerOf<C['responses']>;
type AnswerOf<R> = {
  [S in keyof R]: S extends number
    ? R[S] extends { schema: infer Z extends z.ZodType }
      ? { ok: true; status: S; body: z.output<Z> }
      : never
    : never;
}[keyof R];
