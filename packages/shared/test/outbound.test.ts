import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import {
  addressRefusal,
  OutboundPool,
  OutboundRefused,
  safeFetch,
  type SafeFetchOptions,
} from '../src/http/outbound';

/** A local HTTP server that counts every TCP connection it receives. */
interface LocalServer {
  port: number;
  connections: number;
  close(): Promise<void>;
}

async function startServer(handler: RequestListener, host = '127.0.0.1', port = 0): Promise<LocalServer> {
  const server: Server = createServer(handler);
  const local = {
    port: 0,
    connections: 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server.on('connection', () => local.connections++);
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  local.port = (server.address() as AddressInfo).port;
  return local;
}

const OPTIONS: SafeFetchOptions = { timeoutMs: 2_000, maxBytes: 1024 };

async function refusal(url: string, options: Partial<SafeFetchOptions> = {}): Promise<OutboundRefused> {
  const error = await safeFetch(url, { ...OPTIONS, ...options }).then(
    (response) => new Error(`expected a refusal, got ${response.status}`),
    (caught: unknown) => caught,
  );
  if (!(error instanceof OutboundRefused)) throw error;
  return error;
}

describe('safeFetch address rules', () => {
  let server: LocalServer;
  beforeAll(async () => {
    server = await startServer((_req, res) => res.end('reached'));
  });
  afterAll(() => server.close());

  it.each([
    ['a loopback literal', 'https://127.0.0.1:PORT/'],
    ['a loopback literal in another spelling', 'https://2130706433:PORT/'],
    ['an IPv4-mapped IPv6 loopback', 'https://[::ffff:127.0.0.1]:PORT/'],
    ['the IPv6 loopback', 'https://[::1]:PORT/'],
    ['a private literal', 'https://10.1.2.3/'],
    ['another private literal', 'https://192.168.1.1/'],
    ['the link-local metadata address', 'https://169.254.169.254/latest/meta-data/'],
    ['a CGNAT address', 'https://100.64.0.1/'],
    ['a multicast address', 'https://224.0.0.1/'],
    ['the unspecified address', 'https://0.0.0.0:PORT/'],
    ['the IPv6 unspecified address', 'https://[::]:PORT/'],
    ['an IPv6 link-local address', 'https://[fe80::1]/'],
    ['an IPv6 unique-local address', 'https://[fd00::1]/'],
    ['a NAT64 address of loopback', 'https://[64:ff9b::7f00:1]/'],
    ['an IPv4-compatible IPv6 loopback', 'https://[::127.0.0.1]/'],
    ['a documentation address', 'https://192.0.2.1/'],
  ])('when the URL names %s, then ADDRESS_NOT_ALLOWED and nothing is connected to', async (_name, url) => {
    const error = await refusal(url.replace('PORT', String(server.port)));
    expect(error.reason).toBe('ADDRESS_NOT_ALLOWED');
    expect(server.connections).toBe(0);
  });

  it('when a host name resolves to 127.0.0.1 (stubbed resolver), then ADDRESS_NOT_ALLOWED and nothing is connected to', async () => {
    const lookup = jest.fn(async () => ['127.0.0.1']);
    const error = await refusal(`https://status.example:${server.port}/list`, { lookup });
    expect(error.reason).toBe('ADDRESS_NOT_ALLOWED');
    expect(error.message).toContain('127.0.0.1');
    expect(lookup).toHaveBeenCalledWith('status.example');
    expect(server.connections).toBe(0);
  });

  it('when a host name resolves to a public and a private address, then ADDRESS_NOT_ALLOWED (a mixed answer is refused whole)', async () => {
    const error = await refusal('https://mixed.example/', {
      lookup: async () => ['93.184.215.14', '10.0.0.7'],
    });
    expect(error.reason).toBe('ADDRESS_NOT_ALLOWED');
  });

  it('when loopback is allowed but a public name resolves to 127.0.0.1, then still ADDRESS_NOT_ALLOWED', async () => {
    const error = await refusal(`http://status.example:${server.port}/`, {
      allowLoopback: true,
      lookup: async () => ['127.0.0.1'],
    });
    // http is only for loopback names; the same over https is refused on the address.
    expect(error.reason).toBe('SCHEME');
    const overHttps = await refusal(`https://status.example:${server.port}/`, {
      allowLoopback: true,
      lookup: async () => ['127.0.0.1'],
    });
    expect(overHttps.reason).toBe('ADDRESS_NOT_ALLOWED');
    expect(server.connections).toBe(0);
  });

  it('when loopback is allowed, then a loopback private address is still refused', async () => {
    expect((await refusal('http://10.0.0.1/', { allowLoopback: true })).reason).toBe('SCHEME');
    expect((await refusal('https://10.0.0.1/', { allowLoopback: true })).reason).toBe('ADDRESS_NOT_ALLOWED');
  });

  it('when the scheme is http (loopback not allowed) or not http(s), then SCHEME; credentials in the URL, then INVALID_URL', async () => {
    expect((await refusal(`http://127.0.0.1:${server.port}/`)).reason).toBe('SCHEME');
    expect((await refusal('http://example.com/')).reason).toBe('SCHEME');
    expect((await refusal('ftp://example.com/')).reason).toBe('SCHEME');
    expect((await refusal('file:///etc/passwd')).reason).toBe('SCHEME');
    expect((await refusal('https://user:pass@example.com/')).reason).toBe('INVALID_URL');
    expect((await refusal('not a url')).reason).toBe('INVALID_URL');
    expect(server.connections).toBe(0);
  });

  it('classifies with ipaddr.js: only public unicast passes, loopback only when allowed', () => {
    expect(addressRefusal('93.184.215.14')).toBeUndefined();
    expect(addressRefusal('2606:4700:4700::1111')).toBeUndefined();
    expect(addressRefusal('::ffff:93.184.215.14')).toBeUndefined();
    expect(addressRefusal('127.0.0.1')).toBe('loopback');
    expect(addressRefusal('127.0.0.1', true)).toBeUndefined();
    expect(addressRefusal('::ffff:10.0.0.1')).toBe('private');
    expect(addressRefusal('255.255.255.255')).toBe('broadcast');
    expect(addressRefusal('ff02::1')).toBe('multicast');
    expect(addressRefusal('10.0.0.1', true)).toBe('private');
    expect(addressRefusal('example.com')).toBe('not an IP address');
  });
});

describe('safeFetch exchange rules (a local server, loopback allowed)', () => {
  const local: LocalServer[] = [];
  afterEach(async () => {
    await Promise.all(local.splice(0).map((s) => s.close()));
  });
  const serve = async (handler: RequestListener, host?: string, port?: number) => {
    const started = await startServer(handler, host, port);
    local.push(started);
    return started;
  };
  const LOOPBACK: Partial<SafeFetchOptions> = { allowLoopback: true };

  it('when the receiver answers within the limits, then status, headers and body', async () => {
    const server = await serve((req, res) => {
      res.setHeader('x-seen-method', req.method ?? '');
      res.end('a status list');
    });
    const response = await safeFetch(`http://127.0.0.1:${server.port}/list`, { ...OPTIONS, ...LOOPBACK });
    expect(response).toEqual(
      expect.objectContaining({ status: 200, body: Buffer.from('a status list'), truncated: false }),
    );
    expect(response.headers['x-seen-method']).toBe('GET');
  });

  it('when loopback is allowed and the URL names localhost, then it is fetched over http', async () => {
    const server = await serve((_req, res) => res.end('local'));
    const response = await safeFetch(`http://localhost:${server.port}/`, {
      ...OPTIONS,
      ...LOOPBACK,
      lookup: async () => ['127.0.0.1'],
    });
    expect(response.body.toString()).toBe('local');
  });

  it('when the resolver answers differently on each call, then the socket connects to the address that was checked', async () => {
    // Two servers on the same port at two loopback addresses: whichever answers shows where the
    // socket went. Resolving again between check and connect (with this resolver, or with the
    // system's, where localhost is 127.0.0.1) would land on the second one.
    const checked = await serve((_req, res) => res.end('checked'), '127.0.0.2');
    const other = await serve((_req, res) => res.end('second answer'), '127.0.0.1', checked.port);
    const answers = [['127.0.0.2'], ['127.0.0.1']];
    const lookup = jest.fn(async () => answers.shift() ?? ['127.0.0.1']);
    const response = await safeFetch(`http://localhost:${checked.port}/`, {
      ...OPTIONS,
      ...LOOPBACK,
      lookup,
    });
    expect(response.body.toString()).toBe('checked');
    expect(lookup).toHaveBeenCalledTimes(1);
    expect(other.connections).toBe(0);
  });

  it('when the first answer is refused and a later one would pass, then refused without asking again', async () => {
    // Asking again until an answer passes would let a rebinding resolver choose where to connect.
    const server = await serve((_req, res) => res.end('reached'));
    const answers = [['127.0.0.1'], ['93.184.215.14']];
    const lookup = jest.fn(async () => answers.shift() ?? ['93.184.215.14']);
    const error = await refusal(`https://rebind.example:${server.port}/`, { lookup });
    expect(error.reason).toBe('ADDRESS_NOT_ALLOWED');
    expect(lookup).toHaveBeenCalledTimes(1);
    expect(server.connections).toBe(0);
  });

  it('when https, then the TLS handshake names the URL host (SNI, certificate check), not the address connected to', async () => {
    const names: string[] = [];
    const tls = createTlsServer({
      SNICallback: (name, callback) => {
        names.push(name);
        callback(new Error('no certificate here'), undefined);
      },
    });
    tls.on('tlsClientError', () => undefined);
    await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve));
    try {
      const port = (tls.address() as AddressInfo).port;
      const error = await refusal(`https://localhost:${port}/`, {
        ...LOOPBACK,
        lookup: async () => ['127.0.0.1'],
      });
      expect(error.reason).toBe('UNREACHABLE');
      expect(names).toEqual(['localhost']);
    } finally {
      await new Promise((resolve) => tls.close(resolve));
    }
  });

  it('when the receiver redirects to a private address, then REDIRECT and the target is never contacted', async () => {
    const target = await serve((_req, res) => res.end('internal'));
    const redirecting = await serve((_req, res) => {
      res.writeHead(302, { location: `http://127.0.0.1:${target.port}/internal` }).end();
    });
    const error = await refusal(`http://127.0.0.1:${redirecting.port}/`, LOOPBACK);
    expect(error.reason).toBe('REDIRECT');
    expect(redirecting.connections).toBe(1);
    expect(target.connections).toBe(0);
  });

  it('when the body is larger than maxBytes (declared or streamed), then TOO_LARGE', async () => {
    const declared = await serve((_req, res) => res.end(Buffer.alloc(2048, 'a')));
    expect((await refusal(`http://127.0.0.1:${declared.port}/`, LOOPBACK)).reason).toBe('TOO_LARGE');
    const streamed = await serve((_req, res) => {
      res.write(Buffer.alloc(800, 'a'));
      res.end(Buffer.alloc(800, 'b'));
    });
    expect((await refusal(`http://127.0.0.1:${streamed.port}/`, LOOPBACK)).reason).toBe('TOO_LARGE');
  });

  it('when the body is larger than maxBytes and overflow is truncate, then the first maxBytes', async () => {
    const server = await serve((_req, res) => res.end(Buffer.alloc(4096, 'a')));
    const response = await safeFetch(`http://127.0.0.1:${server.port}/`, {
      ...OPTIONS,
      ...LOOPBACK,
      overflow: 'truncate',
    });
    expect(response.status).toBe(200);
    expect(response.body.length).toBe(1024);
    expect(response.truncated).toBe(true);
  });

  it('when the receiver never answers, then TIMEOUT within the limit', async () => {
    const server = await serve(() => undefined);
    const started = Date.now();
    const error = await refusal(`http://127.0.0.1:${server.port}/`, { ...LOOPBACK, timeoutMs: 300 });
    expect(error.reason).toBe('TIMEOUT');
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('when the receiver sends headers and then stalls the body, then TIMEOUT', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('partial');
    });
    const error = await refusal(`http://127.0.0.1:${server.port}/`, { ...LOOPBACK, timeoutMs: 300 });
    expect(error.reason).toBe('TIMEOUT');
  });

  it('when the resolver never answers, then TIMEOUT within the limit', async () => {
    const error = await refusal('https://slow-dns.example/', {
      timeoutMs: 300,
      lookup: () => new Promise<string[]>(() => undefined),
    });
    expect(error.reason).toBe('TIMEOUT');
  });

  it('when the name does not resolve, then UNREACHABLE', async () => {
    const error = await refusal('https://nowhere.example/', {
      lookup: async () => Promise.reject(new Error('ENOTFOUND')),
    });
    expect(error.reason).toBe('UNREACHABLE');
  });

  it('when a pool is given, then requests to one origin reuse connections, and a name resolving to a private address is still refused', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const pool = new OutboundPool();
    try {
      for (let i = 0; i < 3; i++) {
        const res = await safeFetch(`http://127.0.0.1:${server.port}/`, { ...OPTIONS, ...LOOPBACK, pool });
        expect(res.body.toString()).toBe('ok');
      }
      // Kept between requests (undici may open a second while the first is being released).
      expect(server.connections).toBeLessThan(3);
      const refused = await refusal(`https://private.example.com:${server.port}/`, {
        pool,
        lookup: async () => ['10.0.0.8'],
      });
      expect(refused.reason).toBe('ADDRESS_NOT_ALLOWED');
      const rebound = await refusal(`https://rebound.example.com:${server.port}/`, {
        ...LOOPBACK,
        pool,
        lookup: async () => ['127.0.0.1'],
      });
      expect(rebound.reason).toBe('ADDRESS_NOT_ALLOWED');
    } finally {
      await pool.close();
    }
  });
});
