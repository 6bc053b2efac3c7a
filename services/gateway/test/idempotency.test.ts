import { createLogger } from '@mandate/shared/observability';
import { API_KEY_SCOPES } from '@mandate/shared/contract';
import { listen, callerOf } from '@mandate/shared/http';
import { testTokens } from '@mandate/shared/testing';
import { eventually } from '../../../test/support/eventually';
import { closeUpstreams, keysOf, standInService, upstreamsAt } from './helpers';
import { createApp, type GatewayApp, type Upstreams } from '../src/app';
import type { ResolvedKey } from '../src/auth/key-resolver';
import {
  INVALID_KEY,
  Idempotency,
  KEY_IN_PROGRESS,
  KEY_REUSED,
  MemoryIdempotencyStore,
  type IdempotencySettings,
  type IdempotencyStore,
} from '../src/idempotency';

const TENANT_A = 'tnt_01jaaaaaaaaaaaaaaaaaaaaaaa';
const TENANT_B = 'tnt_01jbbbbbbbbbbbbbbbbbbbbbbb';
const OPERATOR_TOKEN = 'operator-secret-for-tests';
const all = [...API_KEY_SCOPES];
const keys: Record<string, ResolvedKey> = {
  'secret-a': { key_id: 'key_a', tenant_id: TENANT_A, scopes: all, status: 'active', plan: 'enterprise' },
  'secret-b': { key_id: 'key_b', tenant_id: TENANT_B, scopes: all, status: 'active', plan: 'enterprise' },
  'secret-a2': { key_id: 'key_a2', tenant_id: TENANT_A, scopes: all, status: 'active', plan: 'enterprise' },
};
const stubKeys = keysOf(keys);

/** Counts every store call, so a test can show that a request without a key never reaches it. */
class CountingStore implements IdempotencyStore {
  readonly kind = 'memory' as const;
  calls = 0;
  constructor(private readonly inner: IdempotencyStore) {}
  acquire(...args: Parameters<IdempotencyStore['acquire']>) {
    this.calls++;
    return this.inner.acquire(...args);
  }
  complete(...args: Parameters<IdempotencyStore['complete']>) {
    this.calls++;
    return this.inner.complete(...args);
  }
  release(...args: Parameters<IdempotencyStore['release']>) {
    this.calls++;
    return this.inner.release(...args);
  }
  renew(...args: Parameters<IdempotencyStore['renew']>) {
    this.calls++;
    return this.inner.renew(...args);
  }
  close() {
    return this.inner.close();
  }
}

/**
 * A stand-in service that counts how often each path really executed and answers with that
 * count; `/slow` takes 300 ms, `/held` answers only once the test calls `release(path)`, `/fail`
 * answers 503 the first time, `/conflict` 409.
 */
async function countingService() {
  const executed = new Map<string, number>();
  const gates = new Map<string, { open: () => void; opened: Promise<void> }>();
  const gate = (path: string) => {
    let g = gates.get(path);
    if (!g) {
      let open!: () => void;
      const opened = new Promise<void>((resolve) => (open = resolve));
      g = { open, opened };
      gates.set(path, g);
    }
    return g;
  };
  const app = standInService();
  app.all('/{*rest}', async (req, res) => {
    const n = (executed.get(req.path) ?? 0) + 1;
    executed.set(req.path, n);
    if (req.path.includes('slow')) await new Promise((r) => setTimeout(r, 300));
    if (req.path.includes('held')) await gate(req.path).opened;
    // Key and tenant creation answer with a secret, as identity does.
    if (req.path.endsWith('/api-keys') || req.path.endsWith('/rotate')) {
      res.status(201).json({ key_id: `key_${n}`, api_key: `msk_secret${n}`, name: 'k', execution: n });
      return;
    }
    if (req.path === '/v1/platform/tenants') {
      res
        .status(201)
        .json({ tenant: { id: TENANT_B }, api_key: { key_id: `key_${n}`, api_key: `msk_secret${n}` } });
      return;
    }
    if (req.path.includes('fail') && n === 1) {
      res.status(503).json({ error: 'SERVICE_UNAVAILABLE', message: 'try again' });
      return;
    }
    res
      .status(req.path.includes('conflict') ? 409 : 201)
      .setHeader('location', `/v1/things/${n}`)
      .json({
        execution: n,
        tenant: callerOf(req).tenantId,
        body: Buffer.isBuffer(req.body) ? req.body.toString() : null,
      });
  });
  return { server: await listen(app, 0), executed, release: (path: string) => gate(path).open() };
}

/** A gateway in front of the stand-in upstreams whose Idempotency-Key duplicates wait up to waitMs. */
function gatewayWith(
  upstreams: Upstreams,
  store: IdempotencyStore,
  waitMs: number,
  settings: Partial<IdempotencySettings> = {},
): GatewayApp {
  const logger = createLogger('idempotency-test', 'silent');
  return createApp({
    tokens: testTokens,
    logger,
    publisher: { kind: 'in-process', publish: async () => undefined, close: async () => undefined },
    upstreams,
    keys: stubKeys,
    operatorToken: OPERATOR_TOKEN,
    openApiDocument: () => ({}),
    idempotency: new Idempotency(store, logger, { ...settings, waitMs }),
  });
}

describe('gateway Idempotency-Key (memory store)', () => {
  let upstream: Awaited<ReturnType<typeof countingService>>;
  let gateway: GatewayApp;
  let base: string;
  let upstreams: Upstreams;
  const store = new CountingStore(new MemoryIdempotencyStore());

  beforeAll(async () => {
    upstream = await countingService();
    upstreams = upstreamsAt(upstream.server.url);
    gateway = gatewayWith(upstreams, store, 2_000);
    base = (await gateway.start(0)).url;
  });
  afterAll(async () => {
    await gateway.stop();
    await closeUpstreams(upstreams);
    await upstream.server.close();
  });

  let n = 0;
  /** A path of its own per test, so execution counts never mix. */
  const fresh = (suffix = '') => `/v1/mandates/mdt_${++n}${suffix}/revoke`;
  const post = async (
    path: string,
    opts: { key?: string; body?: string; tenant?: 'a' | 'b' | 'a2'; headers?: Record<string, string> } = {},
  ) => {
    const headers: Record<string, string> = {
      authorization: `Bearer ${opts.tenant === 'b' ? TENANT_B : TENANT_A}:secret-${opts.tenant ?? 'a'}`,
      'content-type': 'application/json',
      ...opts.headers,
    };
    if (opts.key !== undefined) headers['idempotency-key'] = opts.key;
    const res = await fetch(base + path, { method: 'POST', headers, body: opts.body ?? '{"reason":"x"}' });
    return { status: res.status, headers: res.headers, text: await res.text() };
  };

  it('when a POST is retried with the same key and body, then it executes once and the retry replays status, body and Location', async () => {
    const path = fresh();
    const first = await post(path, { key: 'k-1' });
    const second = await post(path, { key: 'k-1' });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(second).toMatchObject({ status: 201, text: first.text });
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.headers.get('location')).toBe(first.headers.get('location'));
    expect(second.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(second.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));
    expect(upstream.executed.get(path)).toBe(1);
  });

  it('when the same key comes with another body, then 409 and nothing executes again', async () => {
    const path = fresh();
    await post(path, { key: 'k-2', body: '{"reason":"a"}' });
    const other = await post(path, { key: 'k-2', body: '{"reason":"b"}' });
    expect(other.status).toBe(409);
    expect(JSON.parse(other.text)).toEqual({ error: 'CONFLICT', message: KEY_REUSED });
    expect(upstream.executed.get(path)).toBe(1);
  });

  it('when the same key comes on another path or through the unversioned alias, then another path is a 409 and the alias is a replay', async () => {
    const path = fresh();
    await post(path, { key: 'k-3' });
    expect((await post(fresh(), { key: 'k-3' })).status).toBe(409);
    const alias = await post(path.replace('/v1', '') + '/', { key: 'k-3' });
    expect(alias.status).toBe(201);
    expect(alias.headers.get('idempotent-replayed')).toBe('true');
  });

  it('when 50 identical requests with one key arrive at once, then one executes and 49 replay its exact answer', async () => {
    const path = fresh('-slow');
    const results = await Promise.all(Array.from({ length: 50 }, () => post(path, { key: 'k-concurrent' })));
    expect(upstream.executed.get(path)).toBe(1);
    expect(new Set(results.map((r) => `${r.status} ${r.text}`)).size).toBe(1);
    expect(results.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(49);
  });

  it('when two tenants use the same key, then each executes its own request', async () => {
    const path = fresh();
    const a = await post(path, { key: 'shared-key', tenant: 'a' });
    const b = await post(path, { key: 'shared-key', tenant: 'b' });
    expect(JSON.parse(a.text).tenant).toBe(TENANT_A);
    expect(JSON.parse(b.text).tenant).toBe(TENANT_B);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
    expect(upstream.executed.get(path)).toBe(2);
  });

  it("when two API keys of one tenant use the same key, then each executes its own request and neither gets the other's answer", async () => {
    const path = fresh();
    const a = await post(path, { key: 'same-tenant-key', tenant: 'a' });
    const a2 = await post(path, { key: 'same-tenant-key', tenant: 'a2' });
    expect(a2.headers.get('idempotent-replayed')).toBeNull();
    expect(JSON.parse(a2.text).execution).not.toBe(JSON.parse(a.text).execution);
    expect(upstream.executed.get(path)).toBe(2);
  });

  it.each([
    ['a key creation', `/v1/tenants/${TENANT_A}/api-keys`],
    ['a key rotation', `/v1/tenants/${TENANT_A}/api-keys/key_x/rotate`],
  ])(
    'when %s is replayed, then the replay is the same response without the api_key secret',
    async (_l, path) => {
      const key = `k-secret-${++n}`;
      const first = await post(path, { key });
      const replay = await post(path, { key });
      const body = JSON.parse(first.text);
      expect(body.api_key).toMatch(/^msk_/);
      expect(replay.status).toBe(201);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      const { api_key: _secret, ...rest } = body;
      expect(JSON.parse(replay.text)).toEqual(rest);
      expect(replay.text).not.toContain('msk_');
    },
  );

  it("when the operator's tenant creation is replayed, then the replay keeps the key but not its secret", async () => {
    const send = () =>
      fetch(`${base}/v1/platform/tenants`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${OPERATOR_TOKEN}`,
          'content-type': 'application/json',
          'idempotency-key': 'k-tenant',
        },
        body: '{"name":"x"}',
      });
    const first = (await (await send()).json()) as {
      tenant: unknown;
      api_key: { key_id: string; api_key: string };
    };
    const res = await send();
    expect(first.api_key.api_key).toMatch(/^msk_/);
    expect(res.headers.get('idempotent-replayed')).toBe('true');
    expect(await res.json()).toEqual({ tenant: first.tenant, api_key: { key_id: first.api_key.key_id } });
  });

  it('when the first answer is a 5xx, then it is not kept and a retry executes again', async () => {
    const path = fresh('-fail');
    expect((await post(path, { key: 'k-5' })).status).toBe(503);
    const retry = await post(path, { key: 'k-5' });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect((await post(path, { key: 'k-5' })).headers.get('idempotent-replayed')).toBe('true');
    expect(upstream.executed.get(path)).toBe(2);
  });

  it('when the first answer is a 4xx, then it is kept and replayed like a success', async () => {
    const path = fresh('-conflict');
    const first = await post(path, { key: 'k-4' });
    const retry = await post(path, { key: 'k-4' });
    expect(first.status).toBe(409);
    expect(retry).toMatchObject({ status: 409, text: first.text });
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(upstream.executed.get(path)).toBe(1);
  });

  /**
   * The first request, held at the upstream until released, and a duplicate sent `afterMs` after it
   * got there, through `gateway`: the duplicate is 409 in progress, and the first runs once.
   */
  async function expectDuplicateInProgress(gateway: GatewayApp, key: string, afterMs = 0) {
    const url = (await gateway.start(0)).url;
    try {
      const path = fresh('-held');
      const send = () =>
        fetch(url + path, {
          method: 'POST',
          headers: { authorization: `Bearer ${TENANT_A}:secret-a`, 'idempotency-key': key },
        });
      const first = send();
      // The first holds the key once it reaches the upstream, which keeps it running until released.
      await eventually(() => upstream.executed.get(path), 10_000, 'the first to reach the upstream', 5);
      await new Promise((r) => setTimeout(r, afterMs));
      const dup = await send();
      expect(dup.status).toBe(409);
      expect(await dup.json()).toEqual({ error: 'CONFLICT', message: KEY_IN_PROGRESS });
      upstream.release(path);
      expect((await first).status).toBe(201);
      expect(upstream.executed.get(path)).toBe(1);
    } finally {
      await gateway.stop();
    }
  }

  it('when a duplicate outwaits the bound while the first is still running, then 409 in progress', async () => {
    await expectDuplicateInProgress(gatewayWith(upstreams, new MemoryIdempotencyStore(), 50), 'k-wait');
  });

  it('when the first request runs for many leases, then its gateway keeps renewing the lock and a duplicate never runs it twice', async () => {
    // A lease of 200 ms: unrenewed, the lock would lapse long before the duplicate, sent 1 s later.
    const leased = gatewayWith(upstreams, new MemoryIdempotencyStore(), 100, { leaseMs: 200 });
    await expectDuplicateInProgress(leased, 'k-lease', 1_000);
  });

  it('when the client hangs up before the answer, then the work is still kept and its retry replays it', async () => {
    const path = fresh('-held');
    const abort = new AbortController();
    const gone = fetch(base + path, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${TENANT_A}:secret-a`,
        'content-type': 'application/json',
        'idempotency-key': 'k-hangup',
      },
      body: '{"reason":"x"}',
      signal: abort.signal,
    }).catch(() => 'aborted');
    // Hang up while the upstream is still working on it.
    await eventually(() => upstream.executed.get(path), 10_000, 'the request to reach the upstream', 5);
    abort.abort();
    expect(await gone).toBe('aborted');
    upstream.release(path);
    const retry = await post(path, { key: 'k-hangup' });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(upstream.executed.get(path)).toBe(1);
  });

  it.each([
    ['an empty key', ''],
    ['a key of 256 characters', 'k'.repeat(256)],
    ['a key with non-ASCII characters', 'clé'],
  ])('when the request carries %s, then 400 and nothing executes', async (_label, key) => {
    const path = fresh();
    const headers = new Headers({ authorization: `Bearer ${TENANT_A}:secret-a` });
    // fetch refuses non-ASCII header values, so the raw bytes go through a Latin-1 string.
    headers.set('idempotency-key', Buffer.from(key, 'utf8').toString('latin1'));
    const res = await fetch(base + path, { method: 'POST', headers });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'BAD_REQUEST', message: INVALID_KEY });
    expect(upstream.executed.get(path)).toBeUndefined();
  });

  it('when a key of 255 characters is used, then it is accepted', async () => {
    const path = fresh();
    expect((await post(path, { key: 'k'.repeat(255) })).status).toBe(201);
    expect((await post(path, { key: 'k'.repeat(255) })).headers.get('idempotent-replayed')).toBe('true');
  });

  it('when a POST carries no key, or a GET carries one, then the store is never asked', async () => {
    const before = store.calls;
    const path = fresh();
    await post(path);
    await post(path);
    const get = await fetch(`${base}/v1/mandates`, {
      headers: { authorization: `Bearer ${TENANT_A}:secret-a`, 'idempotency-key': 'k-get' },
    });
    expect(get.status).toBe(201);
    expect(store.calls).toBe(before);
    expect(upstream.executed.get(path)).toBe(2);
  });

  it('when the caller is not authenticated, then 401 comes first and the key is not taken', async () => {
    const path = fresh();
    const res = await fetch(base + path, { method: 'POST', headers: { 'idempotency-key': 'k-401' } });
    expect(res.status).toBe(401);
    expect((await post(path, { key: 'k-401' })).headers.get('idempotent-replayed')).toBeNull();
  });
});
