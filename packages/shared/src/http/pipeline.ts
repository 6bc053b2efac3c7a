import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { AppError, badRequest, describeZodError, unauthorized, type ErrorEnvelope } from '../core/errors';
import {
  INTERNAL_TOKEN_HEADER,
  type CallerContext,
  type InternalService,
  type InternalTokens,
} from '../core/internal-token';
import type { Logger } from '../observability/logger';

/**
 * The request pipeline without a framework: internal token → caller, request id, JSON body,
 * error → envelope. Plain functions of headers, bytes and node's request/response, called by the
 * express middleware (http.ts), the gateway's node:http handler and verify's POST /v1/verify alike, so each
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

/** The tenant of a tenant-scoped call; platform calls without one are refused. */
export function tenantOfCaller(caller: CallerContext): string {
  if (!caller.tenantId) throw unauthorized('Tenant context required');
  return caller.tenantId;
}

// ---- body ----

export const BODY_LIMIT_BYTES = 64 * 1024;
const JSON_CONTENT_TYPE = /^application\/([a-z0-9.+-]*\+)?json\b/i;

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
/** Member names that reach an object's prototype when copied or merged (docs/API.md, "Hardening"): refused anywhere in a body. */
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
  membersOf(value);
}

/**
 * Throws 400 when a parsed JSON value has a forbidden member name (above), or when its text `raw`
 * names a member twice in one object (docs/API.md, "Hardening": JSON.parse would keep the last one, so what one
 * reader checks and another acts on could differ). Every member of the text has its colon, and a
 * duplicate is one member fewer once parsed: counting both is one pass over the bytes and one
 * over the value, the hot path's cost; only a refused body is read again to name the member.
 */
export function assertMemberNames(value: unknown, raw: Uint8Array): void {
  if (membersOf(value) !== membersInText(raw)) throw badRequest(duplicateMessage(raw));
}

/** Walks a parsed value: throws on a forbidden member name; the number of members it holds. */
function membersOf(value: unknown): number {
  let members = 0;
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
    const keys = Object.keys(node);
    members += keys.length;
    for (const key of keys) {
      if (FORBIDDEN_MEMBER_NAMES.has(key)) throw badRequest(`${key} is not allowed as a member name`);
      pending.push((node as Record<string, unknown>)[key]);
    }
  }
  return members;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;

/**
 * The members of a JSON text that parses: its colons outside strings. On the UTF-8 bytes, as a
 * multi-byte character never holds an ASCII byte.
 */
function membersInText(raw: Uint8Array): number {
  let count = 0;
  let inString = false;
  for (let i = 0; i < raw.length; i++) {
    const b = raw[i]!;
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
    } else if (b === QUOTE) inString = true;
    else if (b === COLON) count++;
  }
  return count;
}

/** Names the member found twice, when its name is a plain field name (no raw input echoed otherwise). */
function duplicateMessage(raw: Uint8Array): string {
  const name = firstDuplicateMember(decodeUtf8(raw));
  return name !== undefined && /^[A-Za-z0-9_.-]{1,64}$/.test(name)
    ? `${name} appears twice in one JSON object`
    : 'A member name appears twice in one JSON object';
}

/** The first member name a JSON text (one that parses) gives twice in one object. */
function firstDuplicateMember(text: string): string | undefined {
  // One frame per open object (its names so far, and whether a name comes next) or array (null).
  const frames: ({ names: Set<string>; nameNext: boolean } | null)[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    const top = frames[frames.length - 1];
    if (c === '{') frames.push({ names: new Set(), nameNext: true });
    else if (c === '[') frames.push(null);
    else if (c === '}' || c === ']') frames.pop();
    else if (c === ',' && top) top.nameNext = true;
    else if (c === '"') {
      const start = i;
      for (i++; text[i] !== '"'; i++) if (text[i] === '\\') i++;
      if (top?.nameNext) {
        const name = JSON.parse(text.slice(start, i + 1)) as string;
        if (top.names.has(name)) return name;
        top.names.add(name);
        top.nameNext = false;
      }
    }
  }
  return undefined;
}

/**
 * A raw JSON body as every parser of the project reads it: valid UTF-8 (400 otherwise), an
 * optional BOM, JSON (400 "Malformed JSON body"), no forbidden member name and no member named
 * twice in one object (400); empty → undefined.
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
  assertMemberNames(value, raw);
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
 * The MongoDB driver's (and mongoose's) errors for "no server to talk to, or none in time", by
 * name: a dependency down, not a bug. A subclass means what its parent means, so every name in an
 * error's class chain counts (the driver fails queued operations with `PoolClearedOnNetworkError`,
 * a `MongoPoolClearedError`, when a cut connection's monitor times out).
 */
const DATABASE_UNREACHABLE = new Set([
  'MongoServerSelectionError',
  'MongooseServerSelectionError',
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoNotConnectedError',
  'MongoTopologyClosedError',
  'MongoServerClosedError',
  'MongoPoolClearedError',
  'MongoWaitQueueTimeoutError',
  'MongoOperationTimeoutError',
]);

/**
 * Labels the driver puts on an error a lost connection caused (a transaction or a write cut off
 * mid-way, whatever the error's own class): MongoDB's own word that retrying may succeed.
 */
const RETRY_LABELS = ['TransientTransactionError', 'RetryableWriteError', 'UnknownTransactionCommitResult'];

/**
 * Socket errors by errno code: a connection to a dependency that broke under the request (seen:
 * the MongoDB driver letting through node's own EPIPE "This socket has been ended by the other
 * party" when a cut connection is written to). A dependency down, not a bug.
 */
const SOCKET_ERROR_CODES = new Set([
  'EPIPE',
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ENOTCONN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/** The `name` each class in `err`'s prototype chain gives it, most derived first. */
function classNames(err: object): string[] {
  const names: string[] = [];
  for (
    let proto: object | null = err;
    proto && proto !== Object.prototype;
    proto = Object.getPrototypeOf(proto)
  ) {
    const own = Object.getOwnPropertyDescriptor(proto, 'name');
    const name: unknown = own?.get ? own.get.call(err) : own?.value;
    if (typeof name === 'string') names.push(name);
  }
  return names;
}

function isSocketError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' && SOCKET_ERROR_CODES.has(code);
}

function isDatabaseUnreachable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  if (classNames(err).some((name) => DATABASE_UNREACHABLE.has(name))) return true;
  const e = err as { name?: unknown; message?: unknown; hasErrorLabel?: unknown };
  if (typeof e.hasErrorLabel === 'function') {
    const hasLabel = e.hasErrorLabel as (label: string) => boolean;
    if (RETRY_LABELS.some((label) => hasLabel.call(e, label))) return true;
  }
  // mongoose while disconnected: "Operation `mandates.insertOne()` buffering timed out after 10000ms".
  return (
    e.name === 'MongooseError' && typeof e.message === 'string' && e.message.includes('buffering timed out')
  );
}

/** A dependency down: 503 with Retry-After, and logged (it is not a failure the envelope foresees). */
const dependencyDown = (message: string): ErrorReply => ({
  status: 503,
  envelope: { error: 'SERVICE_UNAVAILABLE', message },
  headers: { 'Retry-After': '1' },
  unexpected: true,
});

/**
 * What any error thrown while answering a request is answered with: an AppError's own envelope, a
 * zod error as 400 naming the field, body-parser's failures as 413/400, a database that cannot be
 * reached as 503 with Retry-After, anything else 500 naming the request id (the only place the
 * client learns of it).
 */
export function errorReply(err: unknown, requestId: string | undefined): ErrorReply {
  if (err instanceof AppError)
    return {
      status: err.status,
      envelope: err.toEnvelope(),
      // A 503 says "retry later" (docs/API.md, "Retries"): every one says when, as dependencyDown's do.
      headers: err.status === 503 ? { 'Retry-After': '1', ...err.headers } : err.headers,
    };
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
  // A Content-Encoding body that does not inflate: zlib's error, which body-parser passes on
  // with a 400 status but no type (docs/API.md, "Errors").
  if (bodyError?.status === 400 && /^Z_/.test(String((err as { code?: unknown }).code)))
    return {
      status: 400,
      envelope: { error: 'BAD_REQUEST', message: 'Request body could not be decompressed' },
    };
  if (bodyError?.type && bodyError.status && bodyError.status < 500)
    return { status: 400, envelope: { error: 'BAD_REQUEST', message: 'Unreadable request body' } };
  if (isSocketError(err)) return dependencyDown('A dependency is unreachable; retry later');
  if (isDatabaseUnreachable(err)) return dependencyDown('The database is unreachable; retry later');
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
