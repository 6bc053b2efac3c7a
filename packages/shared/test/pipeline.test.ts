import mongoose from 'mongoose';
import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import { AppError, badRequest, serviceUnavailable } from '../src/core';
import { createLogger } from '../src/observability';
import { answerError, callerOfHeaders, parseJsonBody, requestIdFor, tenantOfCaller } from '../src/http';
import { assertJsonContentType, errorReply, namedRequestId } from '../src/http/pipeline';
import { callerFor, testTokens } from '../src/testing';

/**
 * The driver's connection-pool errors, which its index does not export: the very classes it
 * throws, loaded from the copy of the driver mongoose uses.
 */
function driverPoolErrors(): {
  PoolClearedOnNetworkError: new (pool: { address: string; serverError: undefined }) => Error;
  WaitQueueTimeoutError: new (message: string, address: string) => Error;
} {
  const driver = require.resolve('mongodb/lib/cmap/errors', { paths: [require.resolve('mongoose')] });
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(driver);
}

const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err instanceof AppError ? `${err.status} ${err.message}` : String(err);
  }
  return 'no refusal';
};
const rejection = (p: Promise<unknown>) =>
  p.then(
    () => 'no refusal',
    (err) => (err instanceof AppError ? `${err.status} ${err.message}` : String(err)),
  );

describe('pipeline: request id', () => {
  it('when X-Request-Id is sane, then it is the request id; otherwise a new one', () => {
    expect(namedRequestId('abc-1.2:3_x')).toBe('abc-1.2:3_x');
    expect(namedRequestId('has space')).toBeUndefined();
    expect(namedRequestId('x'.repeat(129))).toBeUndefined();
    expect(namedRequestId(['a', 'b'])).toBeUndefined();
    expect(requestIdFor('abc')).toBe('abc');
    expect(requestIdFor('<script>')).toMatch(/^req_[0-9a-f]{32}$/);
    expect(requestIdFor(undefined)).not.toBe(requestIdFor(undefined));
  });
});

describe('pipeline: internal token → caller', () => {
  it('when the token is missing, invalid or for another service, then 401 in the words of each', async () => {
    const forMandates = await testTokens.mint(callerFor('tnt_a'), 'mandates');
    expect(await rejection(callerOfHeaders(testTokens, 'verify', {}))).toBe('401 Missing internal token');
    expect(await rejection(callerOfHeaders(testTokens, 'verify', { 'x-internal-token': '' }))).toBe(
      '401 Missing internal token',
    );
    expect(await rejection(callerOfHeaders(testTokens, 'verify', { 'x-internal-token': 'a.b.c' }))).toBe(
      '401 Invalid internal token',
    );
    expect(await rejection(callerOfHeaders(testTokens, 'verify', { 'x-internal-token': forMandates }))).toBe(
      '401 Invalid internal token',
    );
  });

  it('when the call names a sane request id, then the caller carries it instead of the token’s', async () => {
    const token = await testTokens.mint(callerFor('tnt_a', { requestId: 'from-token' }), 'verify');
    const named = await callerOfHeaders(testTokens, 'verify', {
      'x-internal-token': token,
      'x-request-id': 'r1',
    });
    const insane = await callerOfHeaders(testTokens, 'verify', {
      'x-internal-token': token,
      'x-request-id': 'a b',
    });
    expect([named.requestId, named.tenantId, insane.requestId]).toEqual(['r1', 'tnt_a', 'from-token']);
  });

  it('when the caller has no tenant, then a tenant-scoped call is 401', () => {
    expect(tenantOfCaller(callerFor('tnt_a'))).toBe('tnt_a');
    expect(refusal(() => tenantOfCaller(callerFor(null)))).toBe('401 Tenant context required');
  });
});

describe('pipeline: body', () => {
  const bytes = (s: string) => Buffer.from(s, 'utf8');
  it('when the body is JSON in UTF-8, then it is parsed; otherwise 400 naming why', () => {
    expect(parseJsonBody(bytes('{"a":[1,{"b":null}]}'))).toEqual({ a: [1, { b: null }] });
    expect(parseJsonBody(bytes('\ufeff{"a":1}'))).toEqual({ a: 1 });
    expect(parseJsonBody(bytes(''))).toBeUndefined();
    expect(refusal(() => parseJsonBody(Buffer.from([0x7b, 0xff, 0x7d])))).toBe(
      '400 Request body is not valid UTF-8',
    );
    expect(refusal(() => parseJsonBody(bytes('{"a":')))).toBe('400 Malformed JSON body');
    expect(refusal(() => parseJsonBody(bytes('{"a":[{"__proto__":{}}]}')))).toBe(
      '400 __proto__ is not allowed as a member name',
    );
    expect(refusal(() => parseJsonBody(bytes('{"constructor":1}')))).toBe(
      '400 constructor is not allowed as a member name',
    );
  });

  it('when a member name appears twice in one object, at any depth, then 400 (docs/API.md, "Hardening": the last one must not silently win)', () => {
    expect(refusal(() => parseJsonBody(bytes('{"delegate":"d","delegate":"evil"}')))).toBe(
      '400 delegate appears twice in one JSON object',
    );
    expect(refusal(() => parseJsonBody(bytes('{"a":[{"b":1},{"c":{"d":1,"e":2,"d":3}}]}')))).toBe(
      '400 d appears twice in one JSON object',
    );
    // The same name spelled with an escape is the same name once parsed.
    expect(refusal(() => parseJsonBody(bytes('{"ab":1,"a\\u0062":2}')))).toBe(
      '400 ab appears twice in one JSON object',
    );
    // A name that is not a plain field name is not echoed (docs/API.md, "Hardening").
    expect(refusal(() => parseJsonBody(bytes('{"<b>":1,"<b>":2}')))).toBe(
      '400 A member name appears twice in one JSON object',
    );
    // Equal names in different objects, and colons, quotes and escapes inside strings, are fine.
    expect(
      parseJsonBody(bytes('{"a":{"x":1},"b":{"x":"p:q \\" \\\\","y":["a:b"]},"c":[{"x":1},{"x":2}]}')),
    ).toEqual({ a: { x: 1 }, b: { x: 'p:q " \\', y: ['a:b'] }, c: [{ x: 1 }, { x: 2 }] });
  });

  it('when a body is announced, then its type must be JSON', () => {
    expect(
      refusal(() => assertJsonContentType({ 'content-length': '2', 'content-type': 'text/plain' })),
    ).toBe('400 Content-Type must be application/json');
    expect(refusal(() => assertJsonContentType({ 'transfer-encoding': 'chunked' }))).toBe(
      '400 Content-Type must be application/json',
    );
    expect(refusal(() => assertJsonContentType({ 'content-length': '0' }))).toBe('no refusal');
    expect(
      refusal(() =>
        assertJsonContentType({ 'content-length': '2', 'content-type': 'application/vnd.x+json' }),
      ),
    ).toBe('no refusal');
  });
});

describe('pipeline: error → envelope', () => {
  it('maps each kind of failure to its status and envelope', () => {
    const zod = z.strictObject({ principal: z.string() }).safeParse({});
    expect(errorReply(badRequest('x is wrong'), 'r')).toMatchObject({
      status: 400,
      envelope: { error: 'BAD_REQUEST', message: 'x is wrong' },
    });
    expect(errorReply(new AppError('TOO_MANY_REQUESTS', 'slow', { 'Retry-After': '3' }), 'r')).toEqual({
      status: 429,
      envelope: { error: 'TOO_MANY_REQUESTS', message: 'slow' },
      headers: { 'Retry-After': '3' },
    });
    expect(errorReply(zod.error, 'r')).toEqual({
      status: 400,
      envelope: { error: 'BAD_REQUEST', message: 'principal is required' },
    });
    expect(errorReply({ type: 'entity.too.large', status: 413 }, 'r')).toEqual({
      status: 413,
      envelope: { error: 'PAYLOAD_TOO_LARGE', message: 'Request body exceeds 65536 bytes' },
    });
    expect(errorReply({ type: 'entity.parse.failed', status: 400 }, 'r').envelope.message).toBe(
      'Malformed JSON body',
    );
    expect(errorReply({ type: 'request.aborted', status: 400 }, 'r').envelope.message).toBe(
      'Unreadable request body',
    );
    expect(errorReply(new Error('boom'), 'req_1')).toEqual({
      status: 500,
      envelope: { error: 'INTERNAL_ERROR', message: 'Internal error (request req_1)' },
      unexpected: true,
    });
    expect(errorReply(null, undefined).envelope.message).toBe('Internal error (request unknown)');
  });

  it('when a 503 is thrown as an AppError (an upstream service down), then it carries Retry-After too, unless it names its own', () => {
    expect(errorReply(serviceUnavailable('Identity service unavailable'), 'r')).toEqual({
      status: 503,
      envelope: { error: 'SERVICE_UNAVAILABLE', message: 'Identity service unavailable' },
      headers: { 'Retry-After': '1' },
    });
    expect(
      errorReply(new AppError('SERVICE_UNAVAILABLE', 'later', { 'Retry-After': '30' }), 'r').headers,
    ).toEqual({
      'Retry-After': '30',
    });
  });

  it('when the database cannot be reached (driver or mongoose buffering), then 503 with Retry-After, logged', () => {
    const unreachable = {
      status: 503,
      envelope: { error: 'SERVICE_UNAVAILABLE', message: 'The database is unreachable; retry later' },
      headers: { 'Retry-After': '1' },
      unexpected: true,
    };
    expect(errorReply(new mongoose.mongo.MongoNetworkError('connection reset'), 'r')).toEqual(unreachable);
    expect(errorReply(new mongoose.mongo.MongoNotConnectedError('not connected'), 'r')).toEqual(unreachable);
    expect(
      errorReply(
        new mongoose.Error('Operation `mandates.insertOne()` buffering timed out after 10000ms'),
        'r',
      ),
    ).toEqual(unreachable);
    // A server error the driver labels transient (a transaction cut off by the lost connection).
    const aborted = new mongoose.mongo.MongoServerError({
      message: 'Transaction has been aborted',
      code: 251,
    });
    aborted.addErrorLabel('TransientTransactionError');
    expect(errorReply(aborted, 'r')).toEqual(unreachable);
    expect(
      errorReply(
        new mongoose.mongo.MongoServerError({ message: 'Transaction has been aborted', code: 251 }),
        'r',
      ).status,
    ).toBe(500);
    // The driver's subclasses count as their parent: a queued operation failed when the pool was
    // cleared because a cut connection's monitor timed out, and one that waited too long for a connection.
    const { PoolClearedOnNetworkError, WaitQueueTimeoutError } = driverPoolErrors();
    expect(
      errorReply(new PoolClearedOnNetworkError({ address: 'db:27017', serverError: undefined }), 'r'),
    ).toEqual(unreachable);
    expect(errorReply(new WaitQueueTimeoutError('timed out', 'db:27017'), 'r')).toEqual(unreachable);
    const commitUnknown = new mongoose.mongo.MongoServerError({ message: 'commit outcome unknown' });
    commitUnknown.addErrorLabel('UnknownTransactionCommitResult');
    expect(errorReply(commitUnknown, 'r')).toEqual(unreachable);
    // node's own socket error, let through by the driver when a cut connection is written to.
    const epipe = Object.assign(new Error('This socket has been ended by the other party'), {
      code: 'EPIPE',
    });
    expect(errorReply(epipe, 'r')).toEqual({
      ...unreachable,
      envelope: { error: 'SERVICE_UNAVAILABLE', message: 'A dependency is unreachable; retry later' },
    });
    expect(errorReply(Object.assign(new Error('reset'), { code: 'ECONNRESET' }), 'r').status).toBe(503);
    // Any other database error is still a 500: a duplicate key or a bad query is a bug, not an outage.
    expect(errorReply(new mongoose.Error('Cast to ObjectId failed'), 'r').status).toBe(500);
  });

  it('when the answer has started, then an error is only logged', () => {
    const logged: string[] = [];
    const logger = createLogger('pipeline-test', 'silent');
    logger.error = ((_o: unknown, msg: string) => logged.push(msg)) as never;
    const res = { headersSent: true, end: () => logged.push('end') } as unknown as ServerResponse;
    answerError(res, new Error('late'), logger, { requestId: 'r', method: 'GET', path: '/x' });
    expect(logged).toEqual(['error after response started']);
  });
});
