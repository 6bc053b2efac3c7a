import type {
  ContractAnswer,
  ContractCallInput,
  InternalRouteContract,
  RouteShape,
} from '../contract/contract';
import { errorEnvelopeSchema, serviceUnavailable, type ErrorEnvelope } from '../core/errors';
import { ServiceClient, parseUpstreamJson, type RetryPolicy, type UpstreamResponse } from './http-client';
import { INTERNAL_TOKEN_HEADER } from '../core/internal-token';
import type { Logger } from '../observability/logger';

/** Who calls, per call: the internal token minted for it (its tenant, actor, permissions) and its request id. */
export interface CallContext {
  token: string;
  requestId?: string;
}

/** A 4xx the upstream answered in the error envelope: the caller decides what it means to it. */
export interface RefusedAnswer {
  ok: false;
  status: number;
  body: ErrorEnvelope;
}

export interface ContractClientOptions {
  /** The upstream's name in log lines and in the 503's message ("Mandates service unavailable"). */
  name: string;
  logger: Logger;
  /** Upper bound for one call, retries included; absent → the transport's own timeouts only. */
  timeoutMs?: number;
}

/**
 * The one client of a service's routes, built from their contracts: the path from the route and
 * its params, the internal token on every call, and every answer checked against the route's
 * schema — a declared success status with its body, or a 4xx in the error envelope. Anything else
 * (no answer, a 5xx, a body that does not match) is logged and thrown as a 503: a caller never
 * acts on a guess about what another service meant.
 */
export class ContractClient {
  private readonly unavailableMessage: string;

  constructor(
    private readonly transport: ServiceClient,
    private readonly options: ContractClientOptions,
  ) {
    this.unavailableMessage = `${options.name[0]!.toUpperCase()}${options.name.slice(1)} service unavailable`;
  }

  /** A client with its own keep-alive pools to `baseUrls` (closed by `close`). */
  static over(baseUrls: string[], options: ContractClientOptions & { retryPolicy?: RetryPolicy }) {
    return new ContractClient(new ServiceClient(baseUrls, options.retryPolicy), options);
  }

  async call<const C extends RouteShape>(
    route: C,
    input: Partial<ContractCallInput<C>>,
    ctx: CallContext,
  ): Promise<ContractAnswer<C> | RefusedAnswer> {
    const headers: Record<string, string> = {
      [INTERNAL_TOKEN_HEADER]: ctx.token,
      accept: 'application/json',
    };
    if (ctx.requestId) headers['x-request-id'] = ctx.requestId;
    let body: string | undefined;
    if (input.body !== undefined) {
      body = JSON.stringify(input.body);
      headers['content-type'] = 'application/json';
    }
    let res: UpstreamResponse;
    try {
      res = await this.transport.request({
        method: route.method,
        path: pathOf(route.path, input.params as Record<string, string> | undefined, input.query),
        headers,
        body,
        idempotent: route.method === 'GET' || (route as Partial<InternalRouteContract>).idempotent === true,
        ...(this.options.timeoutMs === undefined
          ? {}
          : { signal: AbortSignal.timeout(this.options.timeoutMs) }),
      });
    } catch (err) {
      this.options.logger.warn(
        { err, requestId: ctx.requestId, route: route.operationId },
        `${this.options.name} service unreachable`,
      );
      throw serviceUnavailable(this.unavailableMessage);
    }
    const declared = route.responses[res.status];
    const refused = res.status >= 400 && res.status < 500;
    if (!declared && !refused) {
      this.options.logger.warn(
        { status: res.status, requestId: ctx.requestId, route: route.operationId },
        `${this.options.name} service answered with an error`,
      );
      throw serviceUnavailable(this.unavailableMessage);
    }
    const parsed = parseUpstreamJson(res.body, declared ? declared.schema : errorEnvelopeSchema);
    if (!parsed?.success) {
      // A contract drift between the services: fail the request rather than act on a guess.
      this.options.logger.error(
        {
          status: res.status,
          requestId: ctx.requestId,
          route: route.operationId,
          issues: parsed?.error.issues,
        },
        `${this.options.name} service answered outside its contract`,
      );
      throw serviceUnavailable(this.unavailableMessage);
    }
    return { ok: declared !== undefined, status: res.status, body: parsed.data } as
      ContractAnswer<C> | RefusedAnswer;
  }

  /** The upstream's /healthz, for a readiness check: 'ok' or why not. */
  async check(): Promise<string> {
    try {
      const res = await this.transport.request({
        method: 'GET',
        path: '/healthz',
        ...(this.options.timeoutMs === undefined
          ? {}
          : { signal: AbortSignal.timeout(this.options.timeoutMs) }),
      });
      return res.status === 200 ? 'ok' : `${this.options.name} /healthz answered ${res.status}`;
    } catch (err) {
      return `${this.options.name} unreachable: ${(err as Error).message}`;
    }
  }

  /** Closes the transport's pools (a transport shared with others is closed by its owner instead). */
  close(): Promise<void> {
    return this.transport.close();
  }
}

/** The route's path with each `:name` segment replaced by its encoded param, and the query string. */
export function pathOf(template: string, params?: Record<string, string>, query?: unknown): string {
  const path = template.replace(/:([A-Za-z0-9_]+)/g, (_, name: string) => {
    const value = params?.[name];
    if (value === undefined) throw new Error(`${template}: param ${name} is missing`);
    return encodeURIComponent(value);
  });
  if (query === undefined || query === null) return path;
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query as Record<string, unknown>))
    if (value !== undefined && value !== null) search.set(name, String(value));
  const qs = search.toString();
  return qs ? `${path}?${qs}` : path;
}
