import { Pool, errors as undiciErrors, type Dispatcher } from 'undici';
import type { IncomingHttpHeaders } from 'node:http';
import type { z } from 'zod';
import { injectTraceHeaders, tracingEnabled } from '../observability/tracing';

/**
 * An upstream's answer body read as JSON and checked against `schema`; undefined when it is not
 * JSON at all (a failed check carries the issues, for the log line).
 */
export function parseUpstreamJson<T>(
  body: Buffer,
  schema: z.ZodType<T>,
): ReturnType<z.ZodType<T>['safeParse']> | undefined {
  try {
    return schema.safeParse(JSON.parse(body.toString('utf8')));
  } catch {
    return undefined;
  }
}

export interface UpstreamRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Only idempotent requests are retried (docs/API.md, "Retries"), any request after a refused connection. GET and HEAD are idempotent by default. */
  idempotent?: boolean;
  signal?: AbortSignal;
}

export interface UpstreamResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface RetryPolicy {
  retries: number;
  baseDelayMs: number;
  factor: number;
  /** Upper bound for a Retry-After the server asks for; longer waits are left to the caller. */
  maxRetryAfterMs: number;
}

/** The retry policy of docs/API.md, "Retries" (3 retries, factor 2, 0–50 % jitter, Retry-After honoured) with delays sized for internal hops. */
export const INTERNAL_RETRY_POLICY: RetryPolicy = {
  retries: 3,
  baseDelayMs: 50,
  factor: 2,
  maxRetryAfterMs: 2_000,
};

const RETRYABLE_STATUS = new Set([429, 500, 503]);

export function retryDelayMs(
  attempt: number,
  policy: RetryPolicy,
  retryAfter?: string | string[],
  random = Math.random,
) {
  const header = Array.isArray(retryAfter) ? retryAfter[0] : retryAfter;
  const seconds = header !== undefined ? Number(header) : NaN;
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, policy.maxRetryAfterMs);
  const delay = policy.baseDelayMs * policy.factor ** attempt;
  return delay + delay * 0.5 * random();
}

/**
 * Whether the request surely never reached the service: its connection was refused (a replica
 * stopping or restarting, docs/DEPLOYMENT.md, "Consistency and expiry"). Then even a request that is not
 * idempotent goes to the next replica; after any other failure it may have run, so it is not resent.
 */
function neverSent(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 'ECONNREFUSED';
}

/**
 * Whether the service said nothing for the whole silence bound (a hung replica). Such a call is
 * not retried, idempotent or not: each retry would wait the bound again, and the caller's answer
 * is due once one bound has passed (`UPSTREAM_TIMEOUT_MS`, docs/CONFIGURATION.md).
 */
function wentSilent(err: unknown): boolean {
  return err instanceof undiciErrors.HeadersTimeoutError || err instanceof undiciErrors.BodyTimeoutError;
}

/**
 * A keep-alive client for one service, balancing round-robin across its replicas. Connection
 * errors and 429/500/503 are retried for idempotent requests only, on the next replica; a refused
 * connection (nothing was sent) is retried for every request, a silent one (see `wentSilent`) for none.
 */
export class ServiceClient {
  private readonly pools: Pool[];
  private next = 0;

  constructor(
    readonly baseUrls: string[],
    private readonly policy: RetryPolicy = INTERNAL_RETRY_POLICY,
    connections = 64,
    /** How long a hop may say nothing (headers, then between body chunks) before it counts as down. */
    silenceTimeoutMs = 10_000,
  ) {
    if (baseUrls.length === 0) throw new Error('ServiceClient needs at least one base URL');
    this.pools = baseUrls.map(
      (url) =>
        new Pool(url, {
          connections,
          pipelining: 1,
          keepAliveTimeout: 30_000,
          keepAliveMaxTimeout: 60_000,
          // An internal hop that has said nothing for this long is treated as down, not waited on.
          headersTimeout: silenceTimeoutMs,
          bodyTimeout: silenceTimeoutMs,
        }),
    );
  }

  /**
   * The next replica in turn; a retry takes the replica after the one that failed it, so with two
   * replicas a retry never lands on the one that just refused, whatever other calls picked meanwhile.
   */
  private pickPool(after?: Pool): Pool {
    if (after !== undefined) return this.pools[(this.pools.indexOf(after) + 1) % this.pools.length]!;
    const pool = this.pools[this.next % this.pools.length]!;
    this.next = (this.next + 1) % this.pools.length;
    return pool;
  }

  async request(req: UpstreamRequest): Promise<UpstreamResponse> {
    // The callee's server span becomes a child of the caller's current span.
    if (tracingEnabled()) req = { ...req, headers: injectTraceHeaders({ ...req.headers }) };
    const idempotent = req.idempotent ?? (req.method === 'GET' || req.method === 'HEAD');
    const attempts = this.policy.retries + 1;
    let lastError: unknown;
    let pool: Pool | undefined;
    for (let attempt = 0; attempt < attempts; attempt++) {
      pool = this.pickPool(pool);
      try {
        const response = await exchange(pool, req);
        if (idempotent && attempt + 1 < attempts && RETRYABLE_STATUS.has(response.status)) {
          await sleep(retryDelayMs(attempt, this.policy, response.headers['retry-after']));
          continue;
        }
        return response;
      } catch (err) {
        lastError = err;
        if (err instanceof undiciErrors.RequestAbortedError || req.signal?.aborted) throw err;
        if ((!idempotent && !neverSent(err)) || wentSilent(err)) break;
        if (attempt + 1 < attempts) await sleep(retryDelayMs(attempt, this.policy));
      }
    }
    throw new UpstreamUnavailable(lastError);
  }

  /**
   * Streams the answer into `target` with backpressure (a slow reader pauses the upstream): `head`
   * gets the status and headers just before the first byte is written. Until then nothing has
   * left, so a failure is retried like `request`'s (idempotent requests, 429/500/503 included) or
   * rejects with UpstreamUnavailable. The body is written as it arrives, except that the first
   * chunk waits for the second, so an answer that fits one chunk (most JSON) is written with one
   * `end`. A failure after the first byte destroys `target` — its reader sees an aborted answer,
   * never a short one that looks complete — and rejects with AnswerInterrupted. A target closed by
   * its reader aborts the upstream request, and resolves.
   */
  async stream(
    req: UpstreamRequest,
    target: AnswerTarget,
    head: (status: number, headers: IncomingHttpHeaders) => void,
  ): Promise<void> {
    if (tracingEnabled()) req = { ...req, headers: injectTraceHeaders({ ...req.headers }) };
    const idempotent = req.idempotent ?? (req.method === 'GET' || req.method === 'HEAD');
    const attempts = this.policy.retries + 1;
    let lastError: unknown;
    let pool: Pool | undefined;
    for (let attempt = 0; attempt < attempts; attempt++) {
      const mayRetry = attempt + 1 < attempts;
      pool = this.pickPool(pool);
      try {
        const retry = await streamExchange(pool, req, target, head, idempotent && mayRetry);
        if (!retry) return;
        await sleep(retryDelayMs(attempt, this.policy, retry.retryAfter));
        continue;
      } catch (err) {
        if (err instanceof AnswerInterrupted) throw err;
        lastError = err;
        if (err instanceof undiciErrors.RequestAbortedError || req.signal?.aborted) throw err;
        if ((!idempotent && !neverSent(err)) || wentSilent(err)) break;
        if (mayRetry) await sleep(retryDelayMs(attempt, this.policy));
      }
    }
    throw new UpstreamUnavailable(lastError);
  }

  /**
   * An answer held open (identity's credential feed): its status and its body as it arrives, from
   * the next replica in turn. Never retried: the caller reconnects. `req.signal` ends it, and must
   * before close(), which waits for it.
   */
  async hold(req: UpstreamRequest): Promise<{ status: number; body: AsyncIterable<Buffer> }> {
    const { statusCode, body } = await this.pickPool().request({
      method: req.method as Dispatcher.HttpMethod,
      path: req.path,
      headers: req.headers,
      body: req.body,
      signal: req.signal,
    });
    return { status: statusCode, body };
  }

  async close(): Promise<void> {
    await Promise.all(this.pools.map((p) => p.close()));
  }
}

/**
 * One request/response on a pool through undici's dispatcher interface, gathering the body into
 * one Buffer: no Readable per response and no header object built twice (pool.request costs
 * several times more per call, and every forwarded call pays it).
 */
function exchange(pool: Pool, req: UpstreamRequest): Promise<UpstreamResponse> {
  return new Promise((resolve, reject) => {
    const { signal } = req;
    if (signal?.aborted) return reject(new undiciErrors.RequestAbortedError());
    let abort: ((err: Error) => void) | undefined;
    const onAbort = () => abort?.(new undiciErrors.RequestAbortedError());
    signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => signal?.removeEventListener('abort', onAbort);
    let status = 0;
    let headers: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    pool.dispatch({ method: req.method as 'GET', path: req.path, headers: req.headers, body: req.body }, {
      onConnect(abortRequest: (err: Error) => void) {
        abort = abortRequest;
        if (signal?.aborted) abortRequest(new undiciErrors.RequestAbortedError());
      },
      onHeaders(statusCode: number, rawHeaders: Buffer[]) {
        status = statusCode;
        headers = parseRawHeaders(rawHeaders);
        return true;
      },
      onData(chunk: Buffer) {
        chunks.push(chunk);
        return true;
      },
      onComplete() {
        done();
        resolve({ status, headers, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) });
      },
      onError(err: Error) {
        done();
        reject(err);
      },
    } as unknown as Parameters<Pool['dispatch']>[1]);
  });
}

/** Where `ServiceClient.stream` writes an answer: node's ServerResponse is one. */
export interface AnswerTarget {
  write(chunk: Buffer): boolean;
  end(chunk?: Buffer): unknown;
  destroy(err?: Error): unknown;
  once(event: 'drain' | 'close', listener: () => void): unknown;
  off(event: 'close', listener: () => void): unknown;
  readonly destroyed: boolean;
}

/** An answer that failed after its first byte was written: its target has been destroyed. */
export class AnswerInterrupted extends Error {
  constructor(readonly causeError: unknown) {
    super(`upstream answer interrupted: ${String((causeError as Error)?.message ?? causeError)}`);
  }
}

/**
 * One streamed exchange (see ServiceClient.stream); resolves `{ retryAfter }` when the answer is a
 * retryable status that `mayRetry` allows to retry (its body discarded, nothing written).
 */
function streamExchange(
  pool: Pool,
  req: UpstreamRequest,
  target: AnswerTarget,
  head: (status: number, headers: IncomingHttpHeaders) => void,
  mayRetry: boolean,
): Promise<{ retryAfter: string | string[] | undefined } | undefined> {
  return new Promise((resolve, reject) => {
    const { signal } = req;
    if (signal?.aborted) return reject(new undiciErrors.RequestAbortedError());
    const reader = new ReaderWatch(signal, target);
    pool.dispatch(
      { method: req.method as 'GET', path: req.path, headers: req.headers, body: req.body },
      answerCopier({ target, head, mayRetry, signal, reader, resolve, reject }),
    );
  });
}

/**
 * Whether the reader of a streamed answer went away (or the caller gave up), and stopping the
 * upstream when it does. A class, not an object literal with a getter: a literal's getter is a new
 * closure per call, which gives each object a map of its own in the old generation, and that map
 * keeps the closure's whole request alive through every scavenge until the next full collection
 * (docs/PERFORMANCE.md, "Round 17: what each scavenge copied (issue 35)").
 */
class ReaderWatch {
  gone = false;
  private abort: ((err: Error) => void) | undefined;
  private readonly onGone = () => {
    this.gone = true;
    this.abort?.(new undiciErrors.RequestAbortedError());
  };

  constructor(
    private readonly signal: AbortSignal | undefined,
    private readonly target: AnswerTarget,
  ) {
    signal?.addEventListener('abort', this.onGone, { once: true });
    target.once('close', this.onGone);
  }

  /** The upstream request is under way: `abortRequest` stops it. */
  connected(abortRequest: (err: Error) => void): void {
    this.abort = abortRequest;
    if (this.signal?.aborted || this.target.destroyed) this.onGone();
  }

  /** The exchange is over: stop watching. */
  settle(): void {
    this.signal?.removeEventListener('abort', this.onGone);
    this.target.off('close', this.onGone);
  }
}

/** One streamed exchange's parts, for its dispatch handler (answerCopier). */
interface AnswerCopy {
  target: AnswerTarget;
  head: (status: number, headers: IncomingHttpHeaders) => void;
  mayRetry: boolean;
  signal: AbortSignal | undefined;
  reader: ReaderWatch;
  resolve: (value: { retryAfter: string | string[] | undefined } | undefined) => void;
  reject: (err: Error) => void;
}

/**
 * The dispatch handler that copies the upstream's answer to `target`, with backpressure. The head
 * is written once a second chunk (or the end) comes, so a retryable status is discarded unwritten.
 */
function answerCopier(x: AnswerCopy): Parameters<Pool['dispatch']>[1] {
  const { target, reader, resolve, reject } = x;
  let status = 0;
  let headers: IncomingHttpHeaders = {};
  let resume: (() => void) | undefined;
  let discard = false;
  let opened = false;
  let held: Buffer | undefined;
  const open = () => {
    opened = true;
    x.head(status, headers);
  };
  return {
    onConnect: (abortRequest: (err: Error) => void) => reader.connected(abortRequest),
    onHeaders(statusCode: number, rawHeaders: Buffer[], resumeReading: () => void) {
      status = statusCode;
      headers = parseRawHeaders(rawHeaders);
      resume = resumeReading;
      discard = x.mayRetry && RETRYABLE_STATUS.has(statusCode);
      return true;
    },
    onData(chunk: Buffer) {
      if (discard) return true;
      if (!opened) {
        if (held === undefined) {
          held = chunk;
          return true;
        }
        open();
        target.write(held);
        held = undefined;
      }
      if (target.write(chunk)) return true;
      target.once('drain', () => resume!());
      return false;
    },
    onComplete() {
      reader.settle();
      if (discard) return resolve({ retryAfter: headers['retry-after'] });
      if (!opened) open();
      target.end(held);
      resolve(undefined);
    },
    onError(err: Error) {
      reader.settle();
      if (reader.gone && !x.signal?.aborted) {
        target.destroy();
        return resolve(undefined);
      }
      if (!opened) return reject(err);
      target.destroy();
      reject(new AnswerInterrupted(err));
    },
  } as unknown as Parameters<Pool['dispatch']>[1];
}

function parseRawHeaders(raw: Buffer[]): IncomingHttpHeaders {
  const headers: Record<string, string | string[]> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toString('latin1').toLowerCase();
    const value = raw[i + 1]!.toString('utf8');
    const seen = headers[name];
    if (seen === undefined) headers[name] = value;
    else if (Array.isArray(seen)) seen.push(value);
    else headers[name] = [seen, value];
  }
  return headers as IncomingHttpHeaders;
}

export class UpstreamUnavailable extends Error {
  constructor(readonly causeError: unknown) {
    super(`upstream unavailable: ${String((causeError as Error)?.message ?? causeError)}`);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
