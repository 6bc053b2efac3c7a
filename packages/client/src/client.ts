import { Transport, paged, type MandateClientOptions, type Page, type RequestOptions } from './core';
import { OPERATIONS, type OperationId, type Operations } from './generated';

type Spec = (typeof OPERATIONS)[OperationId];

/**
 * The client of the public API: a method per operation of the OpenAPI document, grouped by
 * resource (`client.mandates.create`, `client.apiKeys.rotate`…), typed from the same contracts
 * the service validates with. Path parameters come first, in the path's order, then the body or
 * the query, then per-call options. A 4xx/5xx throws MandateApiError; 429, 500 and 503 are sent
 * again first (RetryPolicy), a POST with its Idempotency-Key so it never acts twice.
 */
// The methods are made at runtime from the operations table; the interface of the same name types them.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class MandateClient {
  readonly #transport: Transport;

  constructor(options: MandateClientOptions = {}) {
    this.#transport = new Transport(options);
    const self = this as unknown as Record<string, unknown>;
    for (const [operationId, spec] of Object.entries(OPERATIONS) as [OperationId, Spec][]) {
      const method = this.#method(spec);
      Object.defineProperty(method, 'name', { value: operationId });
      if ('namespace' in spec) {
        const group = (self[spec.namespace] ??= {}) as Record<string, unknown>;
        group[spec.name] = method;
      } else {
        self[spec.name] = method;
      }
    }
  }

  /**
   * A call by path, with the client's credentials, retries and errors: for an endpoint of your
   * deployment the document does not list, or an answer wanted as its exact text (`as: 'text'`,
   * an evidence bundle whose digest is checked over its bytes). The answer is not typed.
   */
  request(
    method: string,
    path: string,
    init: {
      query?: Record<string, unknown>;
      body?: unknown;
      options?: RequestOptions;
      as?: 'json' | 'text';
    } = {},
  ): Promise<unknown> {
    return this.#transport.send({ method, path, ...init });
  }

  #method(spec: Spec) {
    return (...args: unknown[]) => {
      const params = spec.params.map((name, i) => {
        const value = args[i];
        if (typeof value !== 'string' || value === '')
          throw new TypeError(`${spec.name}: ${name} must be a non-empty string`);
        return value;
      });
      let next = params.length;
      const body = spec.body === 'none' ? undefined : args[next++];
      const query = spec.query ? (args[next++] as Record<string, unknown> | undefined) : undefined;
      const options = args[next] as RequestOptions | undefined;
      let i = 0;
      const path = spec.path.replace(/:([A-Za-z0-9_]+)/g, () => encodeURIComponent(params[i++]!));
      const send = (q: Record<string, unknown> | undefined) =>
        this.#transport.send({ method: spec.method, path, query: q, body, options });
      if (!spec.list) return send(query);
      const cursor = typeof query?.cursor === 'string' ? query.cursor : undefined;
      return paged((at) => send({ ...query, cursor: at }) as Promise<Page<unknown>>, cursor);
    };
  }
}

// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging, @typescript-eslint/no-empty-object-type
export interface MandateClient extends Operations {}
