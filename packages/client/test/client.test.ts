import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEFAULT_RETRY_POLICY, MandateApiError, MandateClient, OPERATIONS } from '../src';
import { Transport, parseRetryAfter, queryString } from '../src/core';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}
type Answer = { status: number; body?: unknown; headers?: Record<string, string> };

/** A local server answering from a script, one answer per request, recording what it was sent. */
async function scripted(answers: Answer[]) {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const answer = answers.shift() ?? {
        status: 500,
        body: { error: 'INTERNAL_ERROR', message: 'script ran out' },
      };
      const text = answer.body === undefined ? '' : JSON.stringify(answer.body);
      res.writeHead(answer.status, {
        'content-type': 'application/json',
        'x-request-id': `req_${seen.length}`,
        ...answer.headers,
      });
      res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const MANDATE = { id: 'mdt_1', state: 'ACTIVE' };
const fast = { baseDelayMs: 1 };

describe('MandateClient against a scripted server', () => {
  let server: Awaited<ReturnType<typeof scripted>> | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('when a POST answers 503 twice then 201, then it is sent three times with the same generated Idempotency-Key and resolves', async () => {
    const unavailable = { status: 503, body: { error: 'SERVICE_UNAVAILABLE', message: 'down' } };
    server = await scripted([unavailable, unavailable, { status: 201, body: MANDATE }]);
    const client = new MandateClient({ baseUrl: server.baseUrl, apiKey: 'tnt_1:secret', retry: fast });
    await expect(client.mandates.create({ principal: 'p', delegate: 'd' })).resolves.toEqual(MANDATE);
    expect(server.seen.map((s) => `${s.method} ${s.url}`)).toEqual(Array(3).fill('POST /v1/mandates'));
    const keys = server.seen.map((s) => s.headers['idempotency-key']);
    expect(keys[0]).toMatch(/^idk_[0-9a-f]{32}$/);
    expect(new Set(keys).size).toBe(1);
    expect(server.seen[0]!.headers.authorization).toBe('Bearer tnt_1:secret');
    expect(server.seen[0]!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(server.seen[0]!.body)).toEqual({ principal: 'p', delegate: 'd' });
  });

  it('when every answer is 500, then it stops after 3 retries and throws the last answer as MandateApiError', async () => {
    server = await scripted(
      Array(5).fill({ status: 500, body: { error: 'INTERNAL_ERROR', message: 'boom' } }),
    );
    const client = new MandateClient({ baseUrl: server.baseUrl, apiKey: 'tnt_1:k', retry: fast });
    const error = await client.mandates.get('mdt_1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MandateApiError);
    expect(error).toMatchObject({
      status: 500,
      error: 'INTERNAL_ERROR',
      message: 'boom',
      requestId: 'req_4',
    });
    expect(server.seen).toHaveLength(4);
  });

  it('when the answer is 404 or 409, then it is thrown at once, with the code, message and request id', async () => {
    server = await scripted([
      { status: 409, body: { error: 'CONFLICT', message: 'Mandate is already revoked' } },
      { status: 404, body: { error: 'NOT_FOUND', message: 'Mandate not found' } },
    ]);
    const client = new MandateClient({ baseUrl: server.baseUrl, apiKey: 'tnt_1:k', retry: fast });
    await expect(client.mandates.revoke('mdt_1', { reason: 'done' })).rejects.toMatchObject({
      name: 'MandateApiError',
      status: 409,
      error: 'CONFLICT',
      message: 'Mandate is already revoked',
      requestId: 'req_1',
    });
    await expect(client.mandates.get('mdt/../x')).rejects.toMatchObject({ status: 404, requestId: 'req_2' });
    expect(server.seen.map((s) => s.url)).toEqual(['/v1/mandates/mdt_1/revoke', '/v1/mandates/mdt%2F..%2Fx']);
  });

  it('when retries are off, then a POST is sent once and carries no Idempotency-Key unless given one', async () => {
    server = await scripted([
      { status: 503, body: { error: 'SERVICE_UNAVAILABLE', message: 'down' } },
      { status: 200, body: { decision: 'ALLOW' } },
    ]);
    const client = new MandateClient({
      baseUrl: server.baseUrl,
      token: () => 'jwt',
      tenantId: 'tnt_9',
      retry: false,
    });
    await expect(client.verify({ mandate_id: 'mdt_1', action: 'a' })).rejects.toMatchObject({ status: 503 });
    await client.verify({ mandate_id: 'mdt_1', action: 'a' }, { idempotencyKey: 'mine-1' });
    expect(server.seen).toHaveLength(2);
    expect(server.seen[0]!.headers).not.toHaveProperty('idempotency-key');
    expect(server.seen[1]!.headers['idempotency-key']).toBe('mine-1');
    expect(server.seen[1]!.headers.authorization).toBe('Bearer jwt');
    expect(server.seen[1]!.headers['x-tenant-id']).toBe('tnt_9');
  });

  it('when a list is iterated, then it follows the cursors page by page with the filters, and page() reads one page', async () => {
    server = await scripted([
      { status: 200, body: { data: [{ id: 'a' }, { id: 'b' }], has_more: true, next_cursor: 'c1' } },
      { status: 200, body: { data: [{ id: 'c' }], has_more: false, next_cursor: null } },
      { status: 200, body: { data: [{ id: 'a' }], has_more: true, next_cursor: 'c9' } },
    ]);
    const client = new MandateClient({ baseUrl: server.baseUrl, apiKey: 'tnt_1:k' });
    const ids: string[] = [];
    for await (const m of client.mandates.list({ state: 'ACTIVE', limit: 2 })) ids.push(m.id);
    expect(ids).toEqual(['a', 'b', 'c']);
    const page = await client.mandates.list({ cursor: 'c0' }).page();
    expect(page.next_cursor).toBe('c9');
    expect(server.seen.map((s) => s.url)).toEqual([
      '/v1/mandates?state=ACTIVE&limit=2',
      '/v1/mandates?state=ACTIVE&limit=2&cursor=c1',
      '/v1/mandates?cursor=c0',
    ]);
  });

  it('when the answer is not an envelope, then the error says so with its status', async () => {
    server = await scripted([{ status: 502, body: '<html>bad gateway</html>' }]);
    const client = new MandateClient({ baseUrl: server.baseUrl });
    await expect(client.getMe()).rejects.toMatchObject({ status: 502, error: 'UNEXPECTED_RESPONSE' });
  });
});

describe('the retry policy', () => {
  const transport = (random: number) => new Transport({ random: () => random });
  const error = (status: number, retryAfter?: number) =>
    new MandateApiError({ status, error: 'X', message: 'x', retryAfter });

  it('when the defaults are read, then they are the recommended ones: 429, 500, 503; 3 retries; 1 s doubling; up to 50 % jitter', () => {
    expect(DEFAULT_RETRY_POLICY).toMatchObject({
      retries: 3,
      baseDelayMs: 1000,
      factor: 2,
      maxJitter: 0.5,
      statuses: [429, 500, 503],
    });
  });

  it('when a retryable answer comes, then the wait doubles from 1 s with 0–50 % jitter and stops after the third retry', () => {
    expect([0, 1, 2].map((n) => transport(0).waitBeforeRetry(error(503), n))).toEqual([1000, 2000, 4000]);
    expect([0, 1, 2].map((n) => transport(0.999).waitBeforeRetry(error(500), n))).toEqual([
      1499.5, 2999, 5998,
    ]);
    expect(transport(0).waitBeforeRetry(error(503), 3)).toBeUndefined();
  });

  it('when the answer is not 429, 500 or 503, then it is not retried', () => {
    for (const status of [400, 401, 403, 404, 409, 413, 502, 504])
      expect(transport(0).waitBeforeRetry(error(status), 0)).toBeUndefined();
  });

  it('when Retry-After asks for longer than the backoff, then it is honoured; a month-long one is not waited for', () => {
    expect(transport(0).waitBeforeRetry(error(429, 7), 0)).toBe(7000);
    expect(transport(0).waitBeforeRetry(error(429, 0), 1)).toBe(2000);
    expect(transport(0).waitBeforeRetry(error(429, 86_400), 0)).toBeUndefined();
    expect(parseRetryAfter('12')).toBe(12);
    expect(
      parseRetryAfter(new Date(Date.UTC(2026, 0, 1, 0, 0, 30)).toUTCString(), Date.UTC(2026, 0, 1)),
    ).toBe(30);
    expect(parseRetryAfter('soon')).toBeUndefined();
  });

  it('when a query has lists and empty members, then lists are comma-joined and empty ones left out', () => {
    expect(queryString({ type: ['A', 'B'], since: undefined, resource_id: '', limit: 5 })).toBe(
      '?type=A%2CB&limit=5',
    );
  });
});

describe('the operations table', () => {
  it('when the table is read, then every operation names its method, its path parameters in order, and a unique method name', () => {
    const names = new Set<string>();
    for (const [id, spec] of Object.entries(OPERATIONS)) {
      expect(spec.params).toEqual([...spec.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]));
      const key = `${'namespace' in spec ? spec.namespace : ''}.${spec.name}`;
      expect({ id, duplicate: names.has(key) }).toEqual({ id, duplicate: false });
      names.add(key);
    }
    const client = new MandateClient();
    expect(typeof client.mandates.create).toBe('function');
    expect(typeof client.apiKeys.rotate).toBe('function');
    expect(typeof client.verify).toBe('function');
  });
});
