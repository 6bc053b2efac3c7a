import { Router } from 'express';
import { z } from 'zod';
import { createLogger } from '../src/observability';
import { defineRoutes } from '../src/contract';
import {
  baseApp,
  errorMiddleware,
  implement,
  jsonBody,
  listen,
  mountContracts,
  type RunningServer,
} from '../src/http';

const item = z.object({ id: z.string(), note: z.string().nullable() });
const routes = defineRoutes({
  getItem: {
    summary: 'Get',
    method: 'GET',
    path: '/v1/items/:id',
    service: 'mandates',
    auth: 'tenant',
    scope: 'mandates:read',
    request: {
      params: z.object({ id: z.string() }),
      query: z.strictObject({ verbose: z.enum(['1']).optional() }),
    },
    responses: { 200: { description: 'The item', schema: item } },
  },
  noteItem: {
    summary: 'Note',
    method: 'POST',
    path: '/v1/items/:id',
    service: 'mandates',
    auth: 'tenant',
    scope: 'mandates:write',
    request: {
      params: z.object({ id: z.string() }),
      body: z.strictObject({ note: z.string().max(5).optional() }),
      bodyRequired: false,
    },
    responses: { 201: { description: 'Noted', schema: item } },
  },
});

// The compiler holds a handler to its contract: an undeclared status or a body of another shape is an error.
// @ts-expect-error 200 is not a status of noteItem
implement(routes.noteItem)(async () => ({ status: 200, body: { id: 'x', note: null } }));
// @ts-expect-error note must be a string or null
implement(routes.getItem)(async () => ({ status: 200, body: { id: 'x', note: 1 } }));

describe('implement / mountContracts', () => {
  let server: RunningServer;
  beforeAll(async () => {
    const app = baseApp();
    app.use(jsonBody());
    const router = Router();
    mountContracts(router, [
      implement(routes.getItem)(async ({ params, query }) => ({
        status: 200,
        body: { id: params.id, note: query.verbose ?? null },
        headers: { 'Cache-Control': 'no-store' },
      })),
      implement(routes.noteItem)(async ({ params, body }) => ({
        status: 201,
        body: { id: params.id, note: body.note ?? null },
      })),
    ]);
    app.use(router);
    app.use(errorMiddleware(createLogger('contract-route-test', 'silent')));
    server = await listen(app, 0);
  });
  afterAll(() => server.close());

  const call = async (method: string, path: string, body?: string) => {
    const res = await fetch(server.url + path, {
      method,
      body,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as any };
  };

  it('when the input is valid, then the handler gets it parsed and its answer is sent with its status and headers', async () => {
    const got = await call('GET', '/v1/items/a%20b?verbose=1');
    expect(got).toMatchObject({ status: 200, body: { id: 'a b', note: '1' } });
    expect(got.headers.get('cache-control')).toBe('no-store');
    expect(await call('POST', '/v1/items/a', '{"note":"hi"}')).toMatchObject({
      status: 201,
      body: { id: 'a', note: 'hi' },
    });
  });

  it('when an optional body is left out, then it reads as {}', async () => {
    expect(await call('POST', '/v1/items/a')).toMatchObject({ status: 201, body: { id: 'a', note: null } });
  });

  it('when the query or the body is invalid, then 400 names the field as parseOrThrow does', async () => {
    expect(await call('GET', '/v1/items/a?other=1')).toMatchObject({
      status: 400,
      body: { error: 'BAD_REQUEST' },
    });
    expect((await call('GET', '/v1/items/a?other=1')).body.message).toMatch(/other/);
    expect((await call('POST', '/v1/items/a', '{"note":"too long"}')).body).toMatchObject({
      error: 'BAD_REQUEST',
      message: expect.stringMatching(/^note /),
    });
  });

  it('when a body names a member twice, then 400 before the handler runs (docs/API.md, "Hardening")', async () => {
    expect(await call('POST', '/v1/items/a', '{"note":"a","note":"b"}')).toEqual({
      status: 400,
      headers: expect.anything(),
      body: { error: 'BAD_REQUEST', message: 'note appears twice in one JSON object' },
    });
  });

  it('when a known path is called with another method, then 405 with Allow, in the order mounted', async () => {
    const got = await call('DELETE', '/v1/items/a');
    expect(got).toEqual({
      status: 405,
      headers: expect.anything(),
      body: { error: 'METHOD_NOT_ALLOWED', message: 'Method not allowed; use GET, POST' },
    });
    expect(got.headers.get('allow')).toBe('GET, POST');
  });
});
