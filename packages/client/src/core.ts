import { MandateApiError } from './errors';

/** One page of a list: newest first unless `order: 'asc'` was asked; `next_cursor` asks for the next. */
export interface Page<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
  /** How many items the filters select: only where the list was asked with `include_total: 'true'`. */
  total?: number | undefined;
}

/** What one call may add to the client's defaults. */
export interface RequestOptions {
  signal?: AbortSignal;
  /** Extra request headers (X-Request-Id, say). */
  headers?: Record<string, string>;
  /** The POST's Idempotency-Key; by default the client makes one for every POST it may retry. */
  idempotencyKey?: string;
}

/**
 * When a call is sent again: after one of `statuses`, at most `retries` more times, waiting
 * `baseDelayMs × factor^n` plus a random 0 to `maxJitter` of that (n = 0, 1, 2…), or longer when
 * the answer's Retry-After says so. A Retry-After beyond `maxRetryAfterMs` (a monthly quota) is
 * not waited for: the error is thrown with its `retryAfter`.
 */
export interface RetryPolicy {
  retries: number;
  baseDelayMs: number;
  factor: number;
  maxJitter: number;
  statuses: readonly number[];
  maxRetryAfterMs: number;
}

/** The service's recommendation: 429, 500 and 503, three times, from 1 s doubling, 0–50 % jitter. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  retries: 3,
  baseDelayMs: 1000,
  factor: 2,
  maxJitter: 0.5,
  statuses: Object.freeze([429, 500, 503]),
  maxRetryAfterMs: 60_000,
});

export interface MandateClientOptions {
  /** The gateway's origin, e.g. https://mandates.example.com; empty (the default) is the page's own origin. */
  baseUrl?: string;
  /** An API key as `<tenantId>:<apiKey>`, sent as `Authorization: Bearer …`. */
  apiKey?: string;
  /** A bearer token instead (a JWT, or the operator token), or a function giving the current one. */
  token?: string | (() => string | undefined | Promise<string | undefined>);
  /** The tenant a JWT caller acts in (X-Tenant-Id); API keys name their own. */
  tenantId?: string;
  /** The retry policy, or only the members to change; `false` sends every call once. */
  retry?: Partial<RetryPolicy> | false;
  /** Headers sent with every call. */
  headers?: Record<string, string>;
  /** The fetch to use; the global one by default. */
  fetch?: typeof fetch;
  /** A number in [0, 1) for the jitter; Math.random by default. */
  random?: () => number;
}

/** A call in terms of the wire: what the generated methods and `request` turn their arguments into. */
export interface WireCall {
  method: string;
  path: string;
  query?: Record<string, unknown> | undefined;
  body?: unknown;
  options?: RequestOptions | undefined;
  /** 'text': the answer's text as it came, unparsed (a body whose exact bytes matter). */
  as?: 'json' | 'text' | undefined;
}

/**
 * A list read lazily: iterate it for every item (following the cursors), `pages()` for every page,
 * `page()` for the one page the query names (its `cursor` and `limit`).
 */
export interface Paged<T> extends AsyncIterable<T> {
  page(): Promise<Page<T>>;
  pages(): AsyncIterable<Page<T>>;
}

export class Transport {
  private readonly baseUrl: string;
  private readonly retry: RetryPolicy;
  private readonly fetchImpl: typeof fetch;
  private readonly random: () => number;

  constructor(private readonly options: MandateClientOptions) {
    this.baseUrl = (options.baseUrl ?? '').replace(/\/+$/, '');
    this.retry =
      options.retry === false
        ? { ...DEFAULT_RETRY_POLICY, retries: 0 }
        : { ...DEFAULT_RETRY_POLICY, ...options.retry };
    // Bound lazily: a page may replace fetch after the client is made (and a bare `fetch` reference loses its this).
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.random = options.random ?? Math.random;
  }

  async send(call: WireCall): Promise<unknown> {
    const url = this.baseUrl + call.path + queryString(call.query);
    const headers = await this.headers(call);
    const init: RequestInit = {
      method: call.method,
      headers,
      ...(call.body !== undefined ? { body: JSON.stringify(call.body) } : {}),
      ...(call.options?.signal ? { signal: call.options.signal } : {}),
    };
    for (let attempt = 0; ; attempt++) {
      const response = await this.fetchImpl(url, init);
      if (response.ok) return call.as === 'text' ? response.text() : readBody(response);
      const error = await toError(response);
      const wait = this.waitBeforeRetry(error, attempt);
      if (wait === undefined) throw error;
      await sleep(wait, call.options?.signal);
    }
  }

  /** The wait before sending again after `attempt` (0 for the first), or undefined: do not. */
  waitBeforeRetry(error: MandateApiError, attempt: number): number | undefined {
    const policy = this.retry;
    if (attempt >= policy.retries || !policy.statuses.includes(error.status)) return undefined;
    const delay = policy.baseDelayMs * policy.factor ** attempt;
    const backoff = delay + delay * policy.maxJitter * this.random();
    if (error.retryAfter === undefined) return backoff;
    const asked = error.retryAfter * 1000;
    return asked > policy.maxRetryAfterMs ? undefined : Math.max(asked, backoff);
  }

  private async headers(call: WireCall): Promise<Record<string, string>> {
    const headers: Record<string, string> = { Accept: 'application/json', ...this.options.headers };
    const token = typeof this.options.token === 'function' ? await this.options.token() : this.options.token;
    const bearer = this.options.apiKey ?? token;
    if (bearer) headers.Authorization = `Bearer ${bearer}`;
    if (this.options.tenantId) headers['X-Tenant-Id'] = this.options.tenantId;
    if (call.body !== undefined) headers['Content-Type'] = 'application/json';
    // A retried POST must not act twice: the key makes the gateway answer a repeat with the first answer.
    const key =
      call.options?.idempotencyKey ??
      (call.method === 'POST' && this.retry.retries > 0 ? newIdempotencyKey() : undefined);
    if (key !== undefined && call.method === 'POST') headers['Idempotency-Key'] = key;
    return { ...headers, ...call.options?.headers };
  }
}

/** `?a=1&b=x,y` from the members that are set (a list joined by commas, as the API's filters take them). */
export function queryString(query: Record<string, unknown> | undefined): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null || value === '') continue;
    search.set(name, Array.isArray(value) ? value.join(',') : String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

async function readBody(response: Response): Promise<unknown> {
  const text = await response.text();
  if (!text) return undefined;
  // JSON answers are parsed; the few that are not (a status list, a request object) are their text.
  return /\bjson\b/i.test(response.headers.get('content-type') ?? '') ? JSON.parse(text) : text;
}

async function toError(response: Response): Promise<MandateApiError> {
  const requestId = response.headers.get('x-request-id') ?? undefined;
  const retryAfter = parseRetryAfter(response.headers.get('retry-after'));
  let envelope: { error?: unknown; message?: unknown } = {};
  try {
    envelope = ((await response.json()) ?? {}) as typeof envelope;
  } catch {
    // Not the API's envelope (a proxy's page, say): reported by status below.
  }
  const ok = typeof envelope.error === 'string' && typeof envelope.message === 'string';
  return new MandateApiError({
    status: response.status,
    error: ok ? (envelope.error as string) : 'UNEXPECTED_RESPONSE',
    message: ok ? (envelope.message as string) : `HTTP ${response.status} without an error envelope`,
    requestId,
    retryAfter,
  });
}

/** Retry-After in seconds: delta-seconds or an HTTP date. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** 128 random bits; getRandomValues exists in every browser context and in Node 20 (randomUUID needs a secure one). */
export function newIdempotencyKey(): string {
  const bytes = new Uint8Array(16);
  globalThis.crypto.getRandomValues(bytes);
  return 'idk_' + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The items of every page from the query's cursor on, read one page at a time as they are consumed. */
export function paged<T>(
  fetchPage: (cursor: string | undefined) => Promise<Page<T>>,
  firstCursor: string | undefined,
): Paged<T> {
  async function* pages(): AsyncGenerator<Page<T>> {
    let cursor = firstCursor;
    for (;;) {
      const page = await fetchPage(cursor);
      yield page;
      if (!page.has_more || !page.next_cursor) return;
      cursor = page.next_cursor;
    }
  }
  return {
    page: () => fetchPage(firstCursor),
    pages,
    async *[Symbol.asyncIterator]() {
      for await (const page of pages()) yield* page.data;
    },
  };
}
