import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { AppError, badRequest, describeZodError, unauthorized, type ErrorEnvelope } from './errors';
import {
  INTERNAL_TOKEN_HEADER,
  type CallerContext,
  type InternalService,
  type InternalTokens,
} from './internal-token';
import type { Logger } from './logger';

/**
 * The request pipeline without a framework: internal token → caller, request id, JSON body,
 * error → envelope. Plain functions of headers, bytes and node's request/response, called by the
 * express middleware (http.ts), the gateway's node:http handler and verify's hot path alike, so each
 * rule has one spelling.
 */

// ---- request id ----

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The request id a request names itself (X-Request-Id), when it is sane; else undefined. */
export function namedRequestId(incoming: string | string[] | undefined): string | undefined {
  return typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming) ? incoming : undefined;
}

/** The request id of a request: its own X-Request-Id when that is sane, else a new one. */
export function requestIdFor(incoming: string | string[] | undefined): string {
  return namedRequestId(incoming) ?? `req_${randomUUID().replace(/-/g, '')}`;
}

// ---- internal token → caller ----

/**
 * The caller named by a request's internal token for `audience` (the service's own name): 401
 * "Missing internal token" without one, "Invalid internal token" for any token `audience` does not
 * accept. The call's request id is its X-Request-Id when it sends a sane one (the gateway reuses a
 * token across requests and names each request there), else the token's own.
 */
export async function callerOfHeaders(
  tokens: InternalTokens,
  audience: InternalService | readonly InternalService[],
  headers: IncomingHttpHeaders,
): Promise<CallerContext> {
  const token = headers[INTERNAL_TOKEN_HEADER];
  if (typeof token !== 'string' || token === '') throw unauthorized('Missing internal token');
  let caller: CallerContext;
  try {
    caller = await tokens.verify(token, audience);
  } catch {
    throw unauthorized('Invalid internal token');
  }
  const named = namedRequestId(headers['x-request-id']);
  if (named !== undefined) caller.requestId = named;
  return caller;
}

const AUTHENTICATED = Symbol('internal caller');
type Authenticated = { audience: unknown; caller: Promise<CallerContext> };
type Remembering = IncomingMessage & { [AUTHENTICATED]?: Authenticated };

/**
 * callerOfHeaders for a request, unless a fast path in front already asked for the same audience
 * and handed the request over with its outcome (rememberAuthentication): then that outcome, the
 * caller or the same 401, without a second check.
 */
export function authenticateRequest(
  req: IncomingMessage,
  tokens: InternalTokens,
  audience: InternalService | readonly InternalService[],
): Promise<CallerContext> {
  const done = (req as Remembering)[AUTHENTICATED];
  if (done && done.audience === audience) return done.caller;
  return callerOfHeaders(tokens, audience, req.headers);
}

/**
 * What a fast path that checked the token calls before handing the request to express: the
 * outcome travels on the request, so express's requireInternalToken reuses it. (Only on hand-over:
 * a request the fast path answers itself carries nothing extra.)
 */
export function rememberAuthentication(
  req: IncomingMessage,
  audience: InternalService | readonly InternalService[],
  caller: Promise<CallerContext>,
): void {
  (req as Remembering)[AUTHENTICATED] = { audience, caller };
}

/** The tenant of a tenant-scoped call; platform calls without one are refused. */
export function tenantOfCaller(caller: CallerContext): string {
  if (!caller.tenantId) throw unauthorized('Tenant context required');
  return caller.tenantId;
}

// ---- body ----

export const BODY_LIMIT_BYTES = 64 * 1024;
const JSON_CONTENT_TYPE = /^application\/([a-z0-9.+-]*\+)?json\b/i;
const JSON_MEDIA_TYPE = /^application\/([a-z0-9.+-]*\+)?json$/i;
const UTF8_CHARSET = /^charset\s*=\s*"?utf-8"?$/i;

/** Whether a request announces a body (a non-zero length or a transfer encoding). */
export function hasBody(headers: IncomingHttpHeaders): boolean {
  const length = headers['content-length'];
  return (length !== undefined && length !== '0') || headers['transfer-encoding'] !== undefined;
}

/** 400 unless a request with a body says it is JSON: a body of another type is refused, not ignored. */
export function assertJsonContentType(headers: IncomingHttpHeaders): void {
  if (hasBody(headers) && !JSON_CONTENT_TYPE.test(headers['content-type'] ?? ''))
    throw badRequest('Content-Type must be application/json');
}

/**
 * A JSON body in UTF-8 of a known length within the limit, neither compressed nor chunked: the
 * kind readPlainBody reads (a subset of what assertJsonContentType lets through; everything else
 * takes body-parser's way, which inflates, streams and answers 413).
 */
export function isPlainJsonBody(headers: IncomingHttpHeaders): boolean {
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

/**
 * The bytes of a body whose length is known and within the limit (the caller checked): one buffer.
 * A request that breaks off rejects with what body-parser calls it (400 "Unreadable request body").
 */
export function readPlainBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.once('error', (err) => reject(Object.assign(err, { type: 'request.aborted', status: 400 })));
  });
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

// ---- error → envelope ----

export interface ErrorReply {
  status: number;
  envelope: ErrorEnvelope;
  headers?: Record<string, string>;
  /** Not a failure the envelope foresees: log it (with the request id), answer 500. */
  unexpected?: true;
}

/**
 * What any error thrown while answering a request is answered with: an AppError's own envelope, a
 * zod error as 400 naming the field, body-parser's failures as 413/400, anything else 500 naming
 * the request id (the only place the client learns of it).
 */
export function errorReply(err: unknown, requestId: string | undefined): ErrorReply {
  if (err instanceof AppError)
    return { status: err.status, envelope: err.toEnvelope(), headers: err.headers };
  if (err instanceof z.ZodError)
    return { status: 400, envelope: { error: 'BAD_REQUEST', message: describeZodError(err) } };
  const bodyError = err as { type?: string; status?: number } | null | undefined;
  if (bodyError?.type === 'entity.too.large')
    return {
      status: 413,
      envelope: { error: 'PAYLOAD_TOO_LARGE', message: `Request body exceeds ${BODY_LIMIT_BYTES} bytes` },
    };
  if (bodyError?.type === 'entity.parse.failed')
    return { status: 400, envelope: { error: 'BAD_REQUEST', message: 'Malformed JSON body' } };
  if (bodyError?.type && bodyError.status && bodyError.status < 500)
    return { status: 400, envelope: { error: 'BAD_REQUEST', message: 'Unreadable request body' } };
  return {
    status: 500,
    envelope: { error: 'INTERNAL_ERROR', message: `Internal error (request ${requestId ?? 'unknown'})` },
    unexpected: true,
  };
}

/** A JSON answer on node's response (express's included): status, headers, the body in one write. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: string,
  headers?: Record<string, string>,
) {
  if (headers) for (const name in headers) res.setHeader(name, headers[name]!);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}

/** An error envelope as the answer. */
export function sendEnvelope(
  res: ServerResponse,
  status: number,
  envelope: ErrorEnvelope,
  headers?: Record<string, string>,
) {
  sendJson(res, status, JSON.stringify(envelope), headers);
}

/**
 * Answers `err` by errorReply; an unexpected one is logged with the request id, method and path,
 * and an error after the answer started is only logged.
 */
export function answerError(
  res: ServerResponse,
  err: unknown,
  logger: Logger,
  request: { requestId: string | undefined; method: string | undefined; path: string },
): void {
  if (res.headersSent) {
    logger.error({ err, requestId: request.requestId }, 'error after response started');
    return;
  }
  const reply = errorReply(err, request.requestId);
  if (reply.unexpected) logger.error({ err, ...request }, 'unhandled error');
  sendEnvelope(res, reply.status, reply.envelope, reply.headers);
}
