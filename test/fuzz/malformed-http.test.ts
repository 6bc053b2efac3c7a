import { connect } from 'node:net';
import type { RequestListener } from 'node:http';
import { baseApp, listen, type RunningServer } from '@mandate/shared/http';

/** Requests node's HTTP parser refuses never reach express; the fuzz found them answered with a bare 400. */
describe('HTTP that cannot be parsed', () => {
  let server: RunningServer;
  beforeAll(async () => {
    const app = baseApp();
    app.use((_req, res) => res.json({ ok: true }));
    server = await listen(app, 0);
  });
  afterAll(async () => {
    await server.close();
  });

  const raw = (request: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect(server.port, '127.0.0.1', () => socket.write(Buffer.from(request, 'latin1')));
      const chunks: Buffer[] = [];
      socket.on('data', (c) => chunks.push(c));
      socket.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      socket.on('error', reject);
    });

  it.each([
    ['a raw non-ASCII byte in the path', 'GET /v1/mandates/\u00e9 HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['a header without a colon', 'GET /v1/mandates HTTP/1.1\r\nHost: x\r\nbroken\r\n\r\n'],
    ['headers over the limit', `GET / HTTP/1.1\r\nHost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`],
  ])(
    'when a request has %s, then 400 with the exact envelope, JSON and a request id',
    async (_label, request) => {
      const response = await raw(request);
      const [head, body] = response.split('\r\n\r\n');
      expect(head).toMatch(/^HTTP\/1\.1 400 /);
      expect(head).toMatch(/\r\nContent-Type: application\/json/i);
      expect(head).toMatch(/\r\nX-Request-Id: req_[0-9a-f]{32}/i);
      expect(head).toMatch(/\r\nX-Content-Type-Options: nosniff\r\n/i);
      const envelope = JSON.parse(body!);
      expect(Object.keys(envelope).sort()).toEqual(['error', 'message']);
      expect(envelope.error).toBe('BAD_REQUEST');
    },
  );

  it('when a response leaves the server (a 404 included), then it carries X-Content-Type-Options: nosniff', async () => {
    const res = await fetch(`${server.url}/anything`);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const bare = await listen(((_req, r) => void r.writeHead(404).end()) as RequestListener, 0);
    try {
      expect((await fetch(`${bare.url}/x`)).headers.get('x-content-type-options')).toBe('nosniff');
    } finally {
      await bare.close();
    }
  });

  it('when a Content-Length promises more than is sent, then headers and body may take 30 s, not 300 s', () => {
    expect(server.server.headersTimeout).toBe(30_000);
    expect(server.server.requestTimeout).toBe(30_000);
  });

  it('when a HEAD request cannot be parsed, then the 400 carries no body', async () => {
    const response = await raw('HEAD /\u00e9 HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(response).toMatch(/^HTTP\/1\.1 400 /);
    expect(response.split('\r\n\r\n')[1]).toBe('');
  });
});
