import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { z } from 'zod';
import { AppError } from '../src/core';
import { defineInternalRoutes, defineRoutes } from '../src/contract';
import { ContractClient } from '../src/http';
import { pathOf } from '../src/http/contract-client';

/** The routes the client is checked against: one internal with params and a body, one public list. */
const internal = defineInternalRoutes({
  resolveThing: {
    summary: 'A thing',
    method: 'POST',
    path: '/internal/v1/things/:id/resolve',
    service: 'identity',
    idempotent: true,
    request: { params: z.object({ id: z.string() }), body: z.strictObject({ hint: z.string() }) },
    responses: { 200: { description: 'The thing', schema: z.object({ id: z.string(), n: z.int() }) } },
  },
  consumeThing: {
    summary: 'Spends a thing',
    method: 'POST',
    path: '/internal/v1/things/:id/consume',
    service: 'identity',
    request: { params: z.object({ id: z.string() }) },
    responses: { 200: { description: 'Spent', schema: z.object({ id: z.string() }) } },
  },
});
const publicRoutes = defineRoutes({
  listThings: {
    summary: 'Things',
    method: 'GET',
    path: '/v1/things',
    service: 'identity',
    auth: 'tenant',
    request: { query: z.object({ limit: z.int().optional(), cursor: z.string().optional() }) },
    responses: { 200: { description: 'A page', schema: z.object({ data: z.array(z.string()) }) } },
  },
});

interface Seen {
  method: string;
  url: string;
  token: string | undefined;
  requestId: string | undefined;
  body: string;
}

/** A stand-in upstream answering what the test sets, recording what it got. */
async function upstream() {
  const state = { seen: [] as Seen[], status: 200, body: '{}' as string };
  const server: Server = createServer(async (req: IncomingMessage, res) => {
    let body = '';
    for await (const chunk of req) body += String(chunk);
    state.seen.push({
      method: req.method!,
      url: req.url!,
      token: req.headers['x-internal-token'] as string | undefined,
      requestId: req.headers['x-request-id'] as string | undefined,
      body,
    });
    res.writeHead(state.status, { 'content-type': 'application/json' }).end(state.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    state,
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A logger whose lines the test reads. */
function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'info' }, sink), lines };
}

const fastRetries = { retries: 2, baseDelayMs: 1, factor: 1, maxRetryAfterMs: 5 };

describe('ContractClient', () => {
  let up: Awaited<ReturnType<typeof upstream>>;
  let log: ReturnType<typeof capturingLogger>;
  let client: ContractClient;
  beforeEach(async () => {
    up = await upstream();
    log = capturingLogger();
    client = ContractClient.over([up.url], {
      name: 'identity',
      logger: log.logger,
      retryPolicy: fastRetries,
    });
  });
  afterEach(async () => {
    await client.close();
    await up.close();
  });
  const ctx = { token: 'tok', requestId: 'req_1' };
  /** The upstream's next answers. */
  const answers = (status: number, body: unknown) => {
    up.state.status = status;
    up.state.body = typeof body === 'string' ? body : JSON.stringify(body);
  };
  const resolveX = () =>
    client.call(internal.resolveThing, { params: { id: 'x' }, body: { hint: 'h' } }, ctx);

  it('when a route is called, then its path, params, body, token and request id go out and the answer is parsed', async () => {
    answers(200, { id: 'a/b', n: 3, extra: 'dropped' });
    const answer = await client.call(
      internal.resolveThing,
      { params: { id: 'a/b' }, body: { hint: 'h' } },
      ctx,
    );
    expect(answer).toEqual({ ok: true, status: 200, body: { id: 'a/b', n: 3 } });
    expect(up.state.seen).toEqual([
      {
        method: 'POST',
        url: '/internal/v1/things/a%2Fb/resolve',
        token: 'tok',
        requestId: 'req_1',
        body: '{"hint":"h"}',
      },
    ]);
  });

  it('when a 4xx comes in the error envelope, then it is answered to the caller, not thrown', async () => {
    answers(404, { error: 'NOT_FOUND', message: 'no thing' });
    await expect(resolveX()).resolves.toEqual({
      ok: false,
      status: 404,
      body: { error: 'NOT_FOUND', message: 'no thing' },
    });
  });

  it.each([
    ['a declared status with a body outside its schema', 200, JSON.stringify({ id: 'x', n: 'three' })],
    ['a body that is not JSON', 200, 'not json'],
    ['a 4xx that is not the error envelope', 400, JSON.stringify({ oops: true })],
  ])(
    'when the upstream answers %s, then a 503 is thrown and the drift is logged',
    async (_case, status, body) => {
      answers(status, body);
      const err = await client
        .call(internal.resolveThing, { params: { id: 'x' }, body: { hint: 'h' } }, ctx)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).toEnvelope()).toEqual({
        error: 'SERVICE_UNAVAILABLE',
        message: 'Identity service unavailable',
      });
      expect(log.lines).toContainEqual(
        expect.objectContaining({
          level: 50,
          route: 'resolveThing',
          status,
          msg: 'identity service answered outside its contract',
        }),
      );
    },
  );

  it('when the upstream keeps answering 500, then an idempotent route is retried and the call is a logged 503', async () => {
    answers(500, { error: 'INTERNAL_ERROR', message: 'boom' });
    await expect(resolveX()).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    expect(up.state.seen).toHaveLength(1 + fastRetries.retries);
    expect(log.lines).toContainEqual(expect.objectContaining({ level: 40, status: 500 }));
  });

  it('when a route that changes something answers 500, then it is not retried', async () => {
    answers(500, '{}');
    await expect(client.call(internal.consumeThing, { params: { id: 'x' } }, ctx)).rejects.toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
    });
    expect(up.state.seen).toHaveLength(1);
  });

  it('when the upstream is unreachable, then the call is a logged 503', async () => {
    await up.close();
    await expect(client.call(publicRoutes.listThings, { query: {} }, ctx)).rejects.toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
    });
    expect(log.lines).toContainEqual(expect.objectContaining({ msg: 'identity service unreachable' }));
    await expect(client.check()).resolves.toMatch(/^identity unreachable/);
  });

  it('when a route has a query, then its defined members go in the query string', () => {
    expect(pathOf('/v1/things', undefined, { limit: 5, cursor: undefined, status: 'a b' })).toBe(
      '/v1/things?limit=5&status=a+b',
    );
    expect(() => pathOf('/v1/things/:id', {})).toThrow('param id is missing');
  });
});
