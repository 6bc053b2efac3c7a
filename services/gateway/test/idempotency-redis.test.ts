import express from 'express';
import { Redis } from 'ioredis';
import { newId, INTERNAL_SERVICES } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { ServiceClient, listen, requireInternalToken, type RunningServer } from '@mandate/shared/http';
import { testTokens } from '@mandate/shared/testing';
import { createApp, type GatewayApp, type Upstreams } from '../src/app';
import type { KeyResolver } from '../src/auth/key-resolver';
import { Idempotency, RedisIdempotencyStore, type StoredResponse } from '../src/idempotency';
import { startTcpProxy, type TcpProxy } from '../../../test/support/tcp-proxy';
import { deleteRedisKeys } from '../../../test/support/stack';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const { hostname: REDIS_HOST, port: REDIS_PORT } = new URL(REDIS_URL);
const TENANT = 'tnt_01jaaaaaaaaaaaaaaaaaaaaaaa';
const logger = createLogger('idempotency-redis-test', 'silent');
const response: StoredResponse = {
  status: 201,
  headers: { 'content-type': 'application/json' },
  body: Buffer.from('{"ok":true}').toString('base64'),
};

describe('Redis idempotency store', () => {
  const prefix = `test-idem-${newId('req')}`;
  let store: RedisIdempotencyStore;
  let redis: Redis;
  beforeAll(async () => {
    store = new RedisIdempotencyStore(REDIS_URL, prefix, logger);
    await store.ready();
    redis = new Redis(REDIS_URL);
  });
  afterAll(async () => {
    await store.close();
    redis.disconnect();
    await deleteRedisKeys(`${prefix}*`);
  });

  it('when a key is free, then the first acquire takes it and the next sees the pending lock', async () => {
    const lock = { fingerprint: 'f1', token: 't1' };
    expect(await store.acquire(TENANT, 'a', lock, 60_000)).toBeNull();
    expect(await store.acquire(TENANT, 'a', { fingerprint: 'f1', token: 't2' }, 60_000)).toEqual({
      state: 'pending',
      ...lock,
    });
  });

  it('when the holder completes, then the response is kept with the TTL and served to the next acquire', async () => {
    const lock = { fingerprint: 'f2', token: 't1' };
    await store.acquire(TENANT, 'b', lock, 60_000);
    await store.complete(TENANT, 'b', lock, response, 86_400_000);
    expect(await store.acquire(TENANT, 'b', { fingerprint: 'f2', token: 't9' }, 60_000)).toEqual({
      state: 'done',
      fingerprint: 'f2',
      response,
    });
    const ttl = await redis.pttl(`${prefix}:${TENANT}:b`);
    expect(ttl).toBeGreaterThan(86_000_000);
    expect(ttl).toBeLessThanOrEqual(86_400_000);
  });

  it('when someone who does not hold the lock completes or releases, then the lock is untouched', async () => {
    const lock = { fingerprint: 'f3', token: 'holder' };
    await store.acquire(TENANT, 'c', lock, 60_000);
    await store.complete(TENANT, 'c', { fingerprint: 'f3', token: 'intruder' }, response, 60_000);
    await store.release(TENANT, 'c', { fingerprint: 'f3', token: 'intruder' });
    expect(await store.acquire(TENANT, 'c', { fingerprint: 'f3', token: 'x' }, 60_000)).toEqual({
      state: 'pending',
      ...lock,
    });
    await store.release(TENANT, 'c', lock);
    expect(await store.acquire(TENANT, 'c', { fingerprint: 'f3', token: 'next' }, 60_000)).toBeNull();
  });

  it('when the holder lock vanished while its request ran (Redis restarted empty), then its answer is stored all the same and the retry replays it', async () => {
    const lock = { fingerprint: 'f6', token: 'holder' };
    await store.acquire(TENANT, 'lost', lock, 60_000);
    await redis.del(`${prefix}:${TENANT}:lost`);
    await store.complete(TENANT, 'lost', lock, response, 60_000);
    expect(await store.acquire(TENANT, 'lost', { fingerprint: 'f6', token: 'retry' }, 60_000)).toEqual({
      state: 'done',
      fingerprint: 'f6',
      response,
    });
  });

  it('when the holder renews its lock, then it outlives its first lease; another token cannot renew it', async () => {
    const holder = { fingerprint: 'f7', token: 'holder' };
    await store.acquire(TENANT, 'leased', holder, 300);
    await store.renew(TENANT, 'leased', { fingerprint: 'f7', token: 'stranger' }, 60_000);
    expect(await redis.pttl(`${prefix}:${TENANT}:leased`)).toBeLessThanOrEqual(300);
    await store.renew(TENANT, 'leased', holder, 60_000);
    expect(await redis.pttl(`${prefix}:${TENANT}:leased`)).toBeGreaterThan(30_000);
    expect(await store.acquire(TENANT, 'leased', { fingerprint: 'f7', token: 'retry' }, 300)).toEqual({
      state: 'pending',
      ...holder,
    });
  });

  it('when the holder never answers, then the lock lapses after its lease and the key can be taken again', async () => {
    await store.acquire(TENANT, 'd', { fingerprint: 'f4', token: 't1' }, 100);
    const deadline = Date.now() + 20_000;
    let taken = false;
    while (!taken && Date.now() < deadline) {
      taken = (await store.acquire(TENANT, 'd', { fingerprint: 'f4', token: 't2' }, 60_000)) === null;
      if (!taken) await new Promise((r) => setTimeout(r, 50));
    }
    expect(taken).toBe(true);
  });

  it('when two tenants use one key, then they hold separate records', async () => {
    expect(await store.acquire('tnt_one', 'same', { fingerprint: 'f', token: '1' }, 60_000)).toBeNull();
    expect(await store.acquire('tnt_two', 'same', { fingerprint: 'f', token: '2' }, 60_000)).toBeNull();
  });
});

describe('gateway Idempotency-Key when Redis is cut away', () => {
  const prefix = `test-idem-${newId('req')}`;
  let proxy: TcpProxy;
  let store: RedisIdempotencyStore;
  let upstream: RunningServer;
  let client: ServiceClient;
  let gateway: GatewayApp;
  let base: string;
  let executed = 0;

  beforeAll(async () => {
    proxy = await startTcpProxy(REDIS_HOST, Number(REDIS_PORT));
    store = new RedisIdempotencyStore(`redis://127.0.0.1:${proxy.port}`, prefix, logger);
    await store.ready();
    const app = express();
    app.use(requireInternalToken(testTokens, INTERNAL_SERVICES));
    app.post('/{*rest}', (req, res) => {
      executed++;
      if (req.path.endsWith('/api-keys')) {
        res.status(201).json({ key_id: `key_${executed}`, api_key: `msk_secret${executed}`, name: 'k' });
        return;
      }
      res.status(201).json({ execution: executed });
    });
    upstream = await listen(app, 0);
    client = new ServiceClient([upstream.url]);
    const keys: KeyResolver = {
      resolve: async () => ({
        key_id: 'key_a',
        tenant_id: TENANT,
        scopes: ['mandates:write', 'tenants:admin'],
        status: 'active',
        plan: 'beta',
      }),
      evict: () => undefined,
    };
    gateway = createApp({
      tokens: testTokens,
      logger,
      publisher: { kind: 'in-process', publish: async () => undefined, close: async () => undefined },
      upstreams: { mandates: client, verify: client, identity: client, audit: client } satisfies Upstreams,
      keys,
      operatorToken: 'op',
      openApiDocument: () => ({}),
      idempotency: new Idempotency(store, logger),
    });
    base = (await gateway.start(0)).url;
  });
  afterAll(async () => {
    await gateway.stop();
    await client.close();
    await upstream.close();
    await store.close();
    await proxy.close();
    await deleteRedisKeys(`${prefix}*`);
  });

  const post = (key?: string) =>
    fetch(`${base}/v1/mandates`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TENANT}:secret`, ...(key ? { 'idempotency-key': key } : {}) },
    });

  it('when a POST carries no key, then it costs no Redis round trip', async () => {
    proxy.resetCounters();
    expect((await post()).status).toBe(201);
    expect((await post()).status).toBe(201);
    expect(proxy.chunksToTarget).toBe(0);
  });

  it('when a key creation is stored, then no Redis value holds the secret and the replay omits it', async () => {
    const send = () =>
      fetch(`${base}/v1/tenants/${TENANT}/api-keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TENANT}:secret`, 'idempotency-key': 'k-create' },
      });
    const first = (await (await send()).json()) as { api_key: string; key_id: string };
    expect(first.api_key).toMatch(/^msk_/);
    const replay = await send();
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await replay.json()).toEqual({ key_id: first.key_id, name: 'k' });
    const redis = new Redis(REDIS_URL);
    try {
      const names = await redis.keys(`${prefix}:*`);
      expect(names.length).toBeGreaterThan(0);
      for (const name of names) {
        const record = JSON.parse((await redis.get(name)) ?? '{}');
        const stored = record.response ? Buffer.from(record.response.body, 'base64').toString() : '';
        expect(`${name} ${stored}`).not.toContain('msk_');
      }
    } finally {
      redis.disconnect();
    }
  });

  it('when Redis is unreachable, then a POST with a key answers 503 without executing, one without a key still works, and keys work again once Redis is back', async () => {
    expect((await post('before-cut')).status).toBe(201);
    proxy.cut();
    const before = executed;
    const res = await post('during-cut');
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({
      error: 'SERVICE_UNAVAILABLE',
      message: 'Idempotency store unavailable; retry later',
    });
    expect(executed).toBe(before);
    expect((await post()).status).toBe(201);

    proxy.restore();
    const deadline = Date.now() + 10_000;
    let status = 0;
    while (status !== 201 && Date.now() < deadline) {
      status = (await post('after-cut')).status;
      if (status !== 201) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(201);
    const replay = await post('before-cut');
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
  });
});
