import { randomUUID } from 'node:crypto';
import express from 'express';
import pino from 'pino';
import { Redis } from 'ioredis';
import { INTERNAL_SERVICES, newId } from '@mandate/shared/core';
import { type EventPublisher } from '@mandate/shared/events';
import { API_KEY_SCOPES } from '@mandate/shared/contract';
import { listen, requireInternalToken, type RunningServer } from '@mandate/shared/http';
import { testTokens } from '@mandate/shared/testing';
import { createApp, type GatewayApp } from '../src/app';
import type { KeyResolver, ResolvedKey } from '../src/auth/key-resolver';
import {
  PlanLimiter,
  RedisLimiterBackend,
  memoryBackend,
  resolveLimits,
  type PlanOverrides,
} from '../src/limits';
import { closeUpstreams, upstreamsAt } from './helpers';

/**
 * An AuthZEN batch counts one request per item in the limits (docs/API.md#authzen), on the real
 * Redis (own key prefix per gateway) and on the in-memory limiter, with the gateway in-process in
 * front of a stand-in verify that records what reached it.
 */
const TENANT = 'tnt_01jaaaaaaaaaaaaaaaaaaaaaaa';
const keys: KeyResolver = {
  resolve: async (secret): Promise<ResolvedKey | null> => {
    const id = secret.split('.')[1];
    if (!id) return null;
    return {
      key_id: `key_${id}`,
      tenant_id: TENANT,
      scopes: [...API_KEY_SCOPES],
      status: 'active',
      plan: 'beta',
    };
  },
  evict: () => undefined,
};
const freshKey = () => `${TENANT}:beta.${randomUUID().replace(/-/g, '')}`;
const silentPublisher = {
  kind: 'in-process',
  publish: async () => undefined,
  close: async () => undefined,
} as EventPublisher;

const batch = (n: number) => ({
  subject: { type: 'agent', id: 'agent_bob' },
  action: { name: 'payments:create' },
  resource: { type: 'mandate', id: 'mdt_x' },
  evaluations: Array.from({ length: n }, () => ({})),
});

describe.each([
  ['Redis', true],
  ['the in-memory limiter', false],
])('AuthZEN batches in the rate limits (%s)', (_name, onRedis) => {
  let upstream: RunningServer;
  /** The bodies verify received, by path. */
  const received: { path: string; body: string }[] = [];
  const prefix = `test:authzen:${newId('req')}`;
  const gateways: { app: GatewayApp; limiter: PlanLimiter; close: () => Promise<void> }[] = [];

  beforeAll(async () => {
    const app = express();
    app.use(requireInternalToken(testTokens, INTERNAL_SERVICES));
    app.use(express.raw({ type: () => true }));
    app.all('/{*rest}', (req, res) => {
      received.push({ path: req.path, body: Buffer.isBuffer(req.body) ? req.body.toString() : '' });
      res.json({ evaluations: [] });
    });
    upstream = await listen(app, 0);
  });
  afterAll(async () => {
    for (const g of gateways) await g.close();
    await upstream.close();
    const redis = new Redis(6379, '127.0.0.1');
    const found = await redis.keys(`${prefix}*`);
    if (found.length) await redis.del(...found);
    await redis.quit();
  });

  async function gateway(overrides: PlanOverrides) {
    const logger = pino({ level: 'silent' });
    let backend;
    if (onRedis) {
      const redis = new RedisLimiterBackend('redis://127.0.0.1:6379', logger);
      await redis.ready();
      backend = redis;
    } else backend = memoryBackend();
    const limiter = new PlanLimiter(resolveLimits(overrides), backend, {
      prefix: `${prefix}:${gateways.length}`,
      logger,
    });
    const upstreams = upstreamsAt(upstream.url);
    const app = createApp({
      tokens: testTokens,
      logger,
      publisher: silentPublisher,
      upstreams,
      keys,
      operatorToken: 'operator-secret-for-tests',
      openApiDocument: () => ({}),
      limiter,
    });
    const server = await app.start(0);
    gateways.push({
      app,
      limiter,
      close: async () => {
        await app.stop();
        await limiter.close();
        await closeUpstreams(upstreams);
      },
    });
    return async (key: string, body: unknown, path = '/access/v1/evaluations') => {
      const res = await fetch(server.url + path, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
    };
  }

  it('when a 100-item batch is sent, then it spends 100 tokens of the bucket, and a batch over what is left is a 429 with Retry-After that reaches nobody', async () => {
    // A bucket that barely refills during the test: what is left is exactly what was spent.
    const send = await gateway({ beta: { global: { rate: 0.01, burst: 150 } } });
    const key = freshKey();
    const first = await send(key, batch(100));
    expect({ status: first.status, remaining: first.headers.get('ratelimit-remaining') }).toEqual({
      status: 200,
      remaining: '50',
    });
    const before = received.length;
    const over = await send(key, batch(51));
    expect({
      status: over.status,
      body: over.body,
      retryAfter: Number(over.headers.get('retry-after')) >= 1,
      reached: received.length - before,
    }).toEqual({
      status: 429,
      body: { error: 'TOO_MANY_REQUESTS', message: 'Rate limit exceeded' },
      retryAfter: true,
      reached: 0,
    });
    // The refused batch took nothing: the 50 left still pass, as one batch, and the body reaches verify whole.
    const rest = await send(key, batch(50));
    expect({ status: rest.status, remaining: rest.headers.get('ratelimit-remaining') }).toEqual({
      status: 200,
      remaining: '0',
    });
    expect(JSON.parse(received.at(-1)!.body)).toEqual(batch(50));
    expect(received.at(-1)!.path).toBe('/v1/access/v1/evaluations');
  });

  it('when batches are sent, then each item counts one request of the monthly quota', async () => {
    const send = await gateway({ beta: { monthly_quota: 120, global: { rate: 0.01, burst: 1000 } } });
    const key = freshKey();
    expect((await send(key, batch(100))).status).toBe(200);
    const over = await send(key, batch(21));
    expect({
      status: over.status,
      message: over.body.message,
      retryAfter: !!over.headers.get('retry-after'),
    }).toEqual({
      status: 429,
      message: 'Monthly quota exceeded',
      retryAfter: true,
    });
    expect((await send(key, batch(20))).status).toBe(200);
  });

  it('when the body is not a batch of 1 to 100 items, or is a single evaluation, then the call counts one request', async () => {
    const send = await gateway({ beta: { global: { rate: 0.01, burst: 150 } } });
    const key = freshKey();
    const answers = [
      await send(key, '{"evaluations": [1, 2'),
      await send(key, batch(101)),
      await send(key, { evaluations: 'many' }),
      await send(key, { subject: {}, action: {}, resource: {} }),
      await send(key, batch(3), '/access/v1/evaluation'),
    ];
    expect(answers.map((a) => a.headers.get('ratelimit-remaining'))).toEqual([
      '149',
      '148',
      '147',
      '146',
      '145',
    ]);
  });
});
