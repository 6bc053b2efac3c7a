import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { listen, type RunningServer } from '@mandate/shared/http';
import { CapturingPublisher } from '@mandate/shared/testing';
import { closeUpstreams, keysOf, standInService, testGateway, upstreamsAt } from './helpers';
import type { GatewayApp, Upstreams } from '../src/app';

const TENANT = 'tnt_01jaaaaaaaaaaaaaaaaaaaaaaa';
const keys = keysOf({
  secret: {
    key_id: 'key_s',
    tenant_id: TENANT,
    scopes: ['events:read'],
    status: 'active',
    plan: 'enterprise',
  },
});
const auth = { authorization: `Bearer ${TENANT}:secret` };

const CHUNK = Buffer.alloc(64 * 1024, 'x');
const CHUNKS = 256; // 16 MiB

/** Closed until the test opens it; every attempt of a request waits for it (a retry does not slip through). */
interface Gate {
  opened?: Promise<void>;
  passed?: boolean;
}

/**
 * The evidence route of a stand-in audit service: `mdt_big` is a 16 MiB answer written with
 * backpressure, whose second half waits for `gate` (the test opens it once the client holds the
 * first bytes: a gateway that gathers whole answers never gets there); `mdt_broken` dies half-way
 * through its declared length.
 */
function bigAnswers(gate: Gate) {
  const app = standInService();
  app.get('/v1/mandates/:id/evidence', (req, res) => {
    res.setHeader('content-type', 'application/json');
    res.setHeader('content-length', String(CHUNK.length * CHUNKS));
    let sent = 0;
    const more = () => {
      while (sent < CHUNKS) {
        if (sent === CHUNKS / 2) {
          if (req.params.id === 'mdt_broken') return void res.destroy();
          if (gate.opened && !gate.passed)
            return void gate.opened.then(() => (gate.passed = true)).then(more);
        }
        sent += 1;
        if (!res.write(CHUNK)) return void res.once('drain', more);
      }
      res.end();
    };
    more();
  });
  return app;
}

describe('gateway: forwarded answers are streamed', () => {
  let open = () => undefined as void;
  const gate: Gate = {};
  const publisher = new CapturingPublisher();
  let upstream: RunningServer;
  let upstreams: Upstreams;
  let gateway: GatewayApp;
  let base: URL;

  beforeAll(async () => {
    upstream = await listen(bigAnswers(gate), 0);
    upstreams = upstreamsAt(upstream.url);
    gateway = testGateway({ publisher, upstreams, keys });
    base = new URL((await gateway.start(0)).url);
  });
  afterAll(async () => {
    await gateway.stop();
    await closeUpstreams(upstreams);
    await upstream.close();
  });

  const get = (path: string) =>
    new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
      const req = httpRequest({ host: base.hostname, port: base.port, path, headers: auth }, resolve);
      req.on('error', reject);
      req.end();
    });
  const apiCallStatus = (route: string) =>
    publisher.events
      .filter((e) => e.type === 'API_CALL' && (e.data as { route?: string }).route === route)
      .map((e) => (e.data as { status?: number }).status);

  it('when an answer is large, then the client gets its first bytes while the upstream is still writing, and the whole answer intact', async () => {
    gate.opened = new Promise<void>((resolve) => (open = resolve));
    // A gateway that gathers whole answers would answer nothing until the upstream ends, which it never does unread.
    const res = await Promise.race([
      get('/v1/mandates/mdt_big/evidence'),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error('no answer while the upstream holds back its second half')), 5_000),
      ),
    ]);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-length']).toBe(String(CHUNK.length * CHUNKS));
    const hash = createHash('sha256');
    let length = 0;
    res.on('data', (d: Buffer) => {
      hash.update(d);
      length += d.length;
      open();
    });
    await new Promise((r) => res.once('end', r));
    const whole = createHash('sha256');
    for (let i = 0; i < CHUNKS; i++) whole.update(CHUNK);
    expect(length).toBe(CHUNK.length * CHUNKS);
    expect(hash.digest('hex')).toBe(whole.digest('hex'));
  }, 15_000);

  it('when the upstream dies mid-answer, then the client connection is aborted (not a short 200) and the call is recorded as 502', async () => {
    const res = await get('/v1/mandates/mdt_broken/evidence');
    expect(res.statusCode).toBe(200);
    let received = 0;
    const outcome = await new Promise<string>((resolve) => {
      res.on('data', (d: Buffer) => (received += d.length));
      res.once('end', () => resolve('end'));
      res.once('aborted', () => resolve('aborted'));
      res.once('error', () => resolve('error'));
    });
    expect(outcome).not.toBe('end');
    expect(received).toBeLessThan(CHUNK.length * CHUNKS);
    const route = '/v1/mandates/:id/evidence';
    const deadline = Date.now() + 20_000;
    while (!apiCallStatus(route).includes(502) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    expect(apiCallStatus(route)).toContain(502);
  });
});
