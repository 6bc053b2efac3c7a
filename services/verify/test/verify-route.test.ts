import { request } from 'node:http';
import { gzipSync } from 'node:zlib';
import { fixedClock, newId } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { type RunningServer } from '@mandate/shared/http';
import { CapturingPublisher, callerFor, testTokens } from '@mandate/shared/testing';
import { createApp, type VerifyApp } from '../src/app';
import { MemoryMandateReader } from '../src/mandates/memory-mandate-reader';
import { buildMandate, NOW } from './factories';

/**
 * POST /v1/verify has one handler, on node:http in front of verify's express app
 * (docs/DECISIONS.md, "How the services serve HTTP"). Whatever the body looks like, it answers as
 * the express routes do: each unusual request below is also sent to the AuthZEN evaluation route,
 * an express route of the same service behind the same steps, and the errors must be the same.
 */
describe('POST /v1/verify: one handler for every kind of request', () => {
  const reader = new MemoryMandateReader();
  const tenantId = newId('tnt');
  let verify: VerifyApp;
  let server: RunningServer;
  let token: string;
  let mandateId: string;

  beforeAll(async () => {
    const mandate = buildMandate({ tenant_id: tenantId });
    reader.put(mandate);
    mandateId = mandate.id;
    verify = createApp({
      reader,
      publisher: new CapturingPublisher(),
      tokens: testTokens,
      logger: createLogger('verify-route-test', 'silent'),
      clock: fixedClock(NOW),
    });
    server = await verify.start();
    token = await testTokens.mint(callerFor(tenantId), 'verify');
  });
  afterAll(async () => {
    await verify.stop();
  });

  interface Sent {
    method?: string;
    path?: string;
    headers?: Record<string, string | number>;
    body?: Buffer | Buffer[];
  }

  /** One raw request: `body` as an array is sent chunked, piece by piece. */
  function send({ method = 'POST', path = '/v1/verify', headers = {}, body }: Sent) {
    return new Promise<{ status: number; headers: Record<string, unknown>; body: any }>((resolve, reject) => {
      const req = request(`${server.url}${path}`, {
        method,
        headers: { 'x-internal-token': token, ...headers },
      });
      req.once('error', reject);
      req.once('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.once('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode!,
            headers: res.headers,
            body: text ? JSON.parse(text) : undefined,
          });
        });
      });
      if (Array.isArray(body)) for (const piece of body) req.write(piece);
      else if (body) req.write(body);
      req.end();
    });
  }

  const json = (value: unknown) => Buffer.from(JSON.stringify(value));
  const verifyBody = () => json({ mandate_id: mandateId, action: 'payments:create' });

  it('when the body is chunked or gzip-compressed, then it is read and decided', async () => {
    const plain = await send({ headers: { 'content-type': 'application/json' }, body: verifyBody() });
    const whole = verifyBody();
    const chunked = await send({
      headers: { 'content-type': 'application/json' },
      body: [whole.subarray(0, 10), whole.subarray(10)],
    });
    const zipped = gzipSync(whole);
    const compressed = await send({
      headers: {
        'content-type': 'application/json',
        'content-encoding': 'gzip',
        'content-length': zipped.length,
      },
      body: zipped,
    });
    expect(plain).toMatchObject({ status: 200, body: { decision: 'ALLOW' } });
    expect(chunked).toMatchObject({ status: 200, body: plain.body });
    expect(compressed).toMatchObject({ status: 200, body: plain.body });
  });

  it('when the path has a trailing slash or a query, then it is the same route', async () => {
    const headers = { 'content-type': 'application/json' };
    expect(await send({ path: '/v1/verify/', headers, body: verifyBody() })).toMatchObject({ status: 200 });
    expect(await send({ path: '/v1/verify?x=1', headers, body: verifyBody() })).toMatchObject({
      status: 200,
    });
  });

  const unusual: [string, Sent][] = [
    [
      'a body in another charset',
      { headers: { 'content-type': 'application/json; charset=latin1' }, body: json({}) },
    ],
    ['a body of another type', { headers: { 'content-type': 'text/plain' }, body: json({}) }],
    [
      'a chunked body over 64 KiB',
      { headers: { 'content-type': 'application/json' }, body: [Buffer.alloc(70_000, 32)] },
    ],
    [
      'a body over 64 KiB',
      { headers: { 'content-type': 'application/json' }, body: Buffer.alloc(70_000, 32) },
    ],
    [
      'malformed gzip',
      { headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: json({}) },
    ],
    [
      'an unknown encoding',
      { headers: { 'content-type': 'application/json', 'content-encoding': 'br2' }, body: json({}) },
    ],
    [
      'malformed chunked JSON',
      { headers: { 'content-type': 'application/json' }, body: [Buffer.from('{"a":')] },
    ],
    [
      'a forbidden member, chunked',
      { headers: { 'content-type': 'application/json' }, body: [Buffer.from('{"__proto__":{}}')] },
    ],
    [
      'invalid UTF-8, chunked',
      { headers: { 'content-type': 'application/json' }, body: [Buffer.from([0x22, 0xff, 0x22])] },
    ],
    ['no token', { headers: { 'x-internal-token': '', 'content-type': 'application/json' }, body: json({}) }],
  ];

  it.each(unusual)(
    "when the request has %s, then the error is the express routes' own",
    async (_name, sent) => {
      const onVerify = await send(sent);
      const onExpress = await send({ ...sent, path: '/v1/access/v1/evaluation' });
      // A client's mistake, never a 500.
      expect(onVerify.status).toBeGreaterThanOrEqual(400);
      expect(onVerify.status).toBeLessThan(500);
      expect({ status: onVerify.status, body: onVerify.body }).toEqual({
        status: onExpress.status,
        body: onExpress.body,
      });
    },
  );

  it('when another method is used, then 405 with Allow after the token, as on every route', async () => {
    const get = await send({ method: 'GET' });
    expect({ status: get.status, allow: get.headers.allow, body: get.body }).toEqual({
      status: 405,
      allow: 'POST',
      body: { error: 'METHOD_NOT_ALLOWED', message: 'Method not allowed; use POST' },
    });
    const onExpress = await send({ method: 'GET', path: '/v1/access/v1/evaluation' });
    expect(onExpress.body).toEqual({ error: 'METHOD_NOT_ALLOWED', message: 'Method not allowed; use POST' });
    expect(await send({ method: 'GET', headers: { 'x-internal-token': '' } })).toMatchObject({ status: 401 });
  });
});
