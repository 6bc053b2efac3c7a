import { randomUUID } from 'node:crypto';
import express from 'express';
import pino from 'pino';
import type { RateLimiterRes } from 'rate-limiter-flexible';
import { fixedClock, newId, type Clock, INTERNAL_SERVICES } from '@mandate/shared/core';
import { processMetrics, type Logger } from '@mandate/shared/observability';
import { type EventPublisher } from '@mandate/shared/events';
import { type RedisClient, type RedisTarget } from '@mandate/shared/data';
import { API_KEY_SCOPES } from '@mandate/shared/contract';
import { listen, requireInternalToken, type RunningServer } from '@mandate/shared/http';
import { testTokens } from '@mandate/shared/testing';
import { eventually } from '../../../test/support/eventually';
import { closeUpstreams, upstreamsAt } from './helpers';
import { createApp } from '../src/app';
import type { KeyResolver, ResolvedKey } from '../src/auth/key-resolver';
import {
  PlanLimiter,
  RedisLimiterBackend,
  memoryBackend,
  resolveLimits,
  type PlanOverrides,
} from '../src/limits';
import { callerTag, type AtomicPart } from '../src/limits/limiter';
import { BLOCKED_LOOKUPS } from '../src/auth/blocked-lookups';
import { UsableKeys, hashPrefixOf } from '../src/auth/usable-keys';
import { ROUTES, type RouteRule } from '../src/routes/table';
import { startRedisTap, type RedisTap } from '../../../test/support/redis-tap';
import { startTcpProxy, type TcpProxy } from '../../../test/support/tcp-proxy';

/**
 * Where the suite's limiters keep their counters: one Redis node (limits.test.ts) or a Redis Cluster
 * (test/integration/redis-cluster.test.ts).
 */
export interface LimitsRedis {
  name: string;
  /** What each gateway's RedisLimiterBackend connects to. */
  target(): string | RedisTarget;
  /** Whether the backend puts each caller's hash tag in its keys (a Cluster). */
  hashTags: boolean;
  /** A client of the test's own, to read counters. */
  client(): RedisClient;
  /** Every key matching `pattern` (on every master of a Cluster). */
  keys(pattern: string): Promise<string[]>;
  deleteKeys(pattern: string): Promise<void>;
  /**
   * One node only: where it listens, for the tests that put a TCP proxy or a decoder between a
   * gateway and Redis, and for those of the in-memory limiter (run once, with this topology).
   */
  node?: { host: string; port: number };
}

const TENANT = 'tnt_01jaaaaaaaaaaaaaaaaaaaaaaa';
const ALL_SCOPES = [...API_KEY_SCOPES];

// Any secret "<plan>.<id>" is a valid key of that plan, so every test mints fresh keys.
const keys: KeyResolver = {
  resolve: async (secret): Promise<ResolvedKey | null> => {
    const [plan, id] = secret.split('.');
    if ((plan !== 'beta' && plan !== 'enterprise') || !id) return null;
    return { key_id: `key_${id}`, tenant_id: TENANT, scopes: ALL_SCOPES, status: 'active', plan };
  },
  evict: () => undefined,
};
const freshKey = (plan: ResolvedKey['plan'] = 'beta') =>
  `${TENANT}:${plan}.${randomUUID().replace(/-/g, '')}`;

const silentPublisher: EventPublisher = {
  kind: 'in-process',
  publish: async () => undefined,
  close: async () => undefined,
} as EventPublisher;

function capturingLogger(): { logger: Logger; lines: () => { level: number; msg: string }[] } {
  const out: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void out.push(line) });
  return { logger, lines: () => out.map((l) => JSON.parse(l)) };
}

const ONBOARDING_RULE: RouteRule = {
  method: 'POST',
  path: '/v1/onboarding/request',
  service: 'identity',
  auth: 'public',
  limit: 'onboarding',
};
// The onboarding route may not be in the shared table yet; tests add it to a copy.
const ROUTES_WITH_ONBOARDING = ROUTES.some((r) => r.limit === 'onboarding')
  ? ROUTES
  : [...ROUTES, ONBOARDING_RULE];

interface TestGateway {
  url: string;
  call(
    method: string,
    path: string,
    auth?: string,
    headers?: Record<string, string>,
  ): Promise<{ status: number; headers: Headers; body: any }>;
  ready(): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Sends concurrent batches until the limiter refuses one request (at most 10 batches): the bucket
 * refills while a slow machine works through a batch, so a single batch may legitimately all pass.
 */
async function sendUntilRefused<R extends { status: number }>(
  send: () => Promise<R>,
  batchSize: number,
): Promise<R[]> {
  const all: R[] = [];
  for (let batch = 0; batch < 10 && !all.some((r) => r.status === 429); batch++) {
    all.push(...(await Promise.all(Array.from({ length: batchSize }, send))));
  }
  return all;
}

/** A counter of this process's metrics, summed over the series whose labels include `labels`. */
async function counterValue(name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = await processMetrics().registry.getSingleMetric(name)!.get();
  return metric.values
    .filter((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want))
    .reduce((sum, v) => sum + v.value, 0);
}

/**
 * Rate limits and quotas (docs/API.md, "Rate limits and quotas") against a real Redis, with the
 * gateway in-process in front of an echo upstream. Every gateway here has its own random key prefix.
 */
export function describeLimits(redis: LimitsRedis): void {
  const { node } = redis;
  /** The limiter on Redis, then (once, with one node) in memory: month-long counts must agree on both. */
  const EACH_LIMITER: [string, number | null | undefined][] = node
    ? [
        ['Redis', undefined],
        ['the in-memory limiter', null],
      ]
    : [['Redis', undefined]];
  /** A caller's id as its keys carry it. */
  const inKey = callerTag(redis.hashTags).of;

  describe(`gateway rate limits and quotas (${redis.name})`, () => {
    let upstream: RunningServer;
    let proxy: TcpProxy | undefined;
    const opened: TestGateway[] = [];
    const prefixes: string[] = [];
    const taps: RedisTap[] = [];

    beforeAll(async () => {
      const app = express();
      app.use(requireInternalToken(testTokens, INTERNAL_SERVICES));
      app.all('/{*rest}', (_req, res) => void res.json({ ok: true }));
      upstream = await listen(app, 0);
      if (node) proxy = await startTcpProxy(node.host, node.port);
    });

    afterAll(async () => {
      for (const g of opened) await g.close();
      for (const tap of taps) await tap.close();
      await proxy?.close();
      await upstream.close();
      // Bucket keys expire on their own within seconds; quota keys would linger a month.
      for (const prefix of prefixes) await redis.deleteKeys(`${prefix}:*`);
    });

    async function startGateway(
      options: {
        prefix?: string;
        overrides?: PlanOverrides;
        clock?: Clock;
        /** One node's port (a proxy's, to cut it); null for the in-memory limiter; unset: the suite's Redis. */
        redisPort?: number | null;
        routes?: RouteRule[];
        keys?: KeyResolver;
        usableKeys?: UsableKeys;
        trustProxy?: boolean;
        logger?: Logger;
        authFailuresPerMinute?: number;
        /** The in-memory limiter's time (with redisPort null). */
        now?: () => number;
      } = {},
    ): Promise<TestGateway> {
      const prefix = options.prefix ?? `test:rl:${newId('req')}`;
      prefixes.push(prefix);
      const logger = options.logger ?? pino({ level: 'silent' });
      const upstreams = upstreamsAt(upstream.url);
      let backend;
      if (options.redisPort === null) backend = memoryBackend(options.now);
      else {
        const shared = new RedisLimiterBackend(
          options.redisPort === undefined ? redis.target() : `redis://${node!.host}:${options.redisPort}`,
          logger,
        );
        await shared.ready();
        backend = shared;
      }
      const limiter = new PlanLimiter(resolveLimits(options.overrides), backend, {
        prefix,
        clock: options.clock,
        logger,
        authFailuresPerMinute: options.authFailuresPerMinute,
      });
      const app = createApp({
        tokens: testTokens,
        logger,
        publisher: silentPublisher,
        upstreams,
        keys: options.keys ?? keys,
        usableKeys: options.usableKeys,
        operatorToken: 'operator-secret-for-tests',
        openApiDocument: () => ({ openapi: '3.1.0' }),
        routes: options.routes,
        limiter,
        trustProxy: options.trustProxy,
      });
      const server = await app.start(0);
      const gateway: TestGateway = {
        url: server.url,
        async call(method, path, auth, headers = {}) {
          const res = await fetch(server.url + path, {
            method,
            headers: { ...(auth ? { authorization: `Bearer ${auth}` } : {}), ...headers },
          });
          const text = await res.text();
          // JSON, except the text exposition of /metrics.
          const json = text && res.headers.get('content-type')?.includes('json');
          return {
            status: res.status,
            headers: res.headers,
            body: json ? JSON.parse(text) : text || undefined,
          };
        },
        async ready() {
          const res = await fetch(`${server.url}/readyz`);
          return { status: res.status, body: await res.json() };
        },
        async close() {
          await app.stop();
          await limiter.close();
          await closeUpstreams(upstreams);
        },
      };
      opened.push(gateway);
      return gateway;
    }

    /** A gateway whose clock starts at `instant`; the test moves it across a day or a month. */
    async function startGatewayAt(instant: string, options: Parameters<typeof startGateway>[0] = {}) {
      const clock = fixedClock(instant);
      return { clock, g: await startGateway({ ...options, clock }) };
    }

    const statuses = (rs: { status: number }[]) => rs.map((r) => r.status);
    const count = (rs: { status: number }[], status: number) => rs.filter((r) => r.status === status).length;

    /** Sends at a steady pace (open loop: a slow answer does not delay the next request). */
    async function paced<T>(perSecond: number, durationMs: number, send: () => Promise<T>): Promise<T[]> {
      const started = performance.now();
      const pending: Promise<T>[] = [];
      const n = Math.floor((perSecond * durationMs) / 1000);
      for (let i = 0; i < n; i++) {
        const wait = started + (i * 1000) / perSecond - performance.now();
        if (wait > 0) await sleep(wait);
        pending.push(send());
      }
      return Promise.all(pending);
    }

    describe('the documented numbers (beta: global 50/s, burst 100)', () => {
      let g: TestGateway;
      beforeAll(async () => {
        g = await startGateway();
        await g.call('GET', '/v1/mandates', freshKey()); // warm connections and scripts
      });

      it('when a fresh key sends its burst of 100 at once, then all pass; more at once are 429 "Rate limit exceeded" with Retry-After', async () => {
        const auth = freshKey();
        const started = performance.now();
        const first = await Promise.all(
          Array.from({ length: 100 }, () => g.call('GET', '/v1/mandates', auth)),
        );
        expect(statuses(first)).toEqual(Array(100).fill(200));

        // Tokens refill at 50/s while requests are in flight, so send until one is refused (this is
        // the first batch on any machine that answers 150 requests within 3 s).
        const more: Awaited<ReturnType<TestGateway['call']>>[] = [];
        for (let batch = 0; batch < 10 && !more.some((r) => r.status === 429); batch++) {
          more.push(
            ...(await Promise.all(Array.from({ length: 50 }, () => g.call('GET', '/v1/mandates', auth)))),
          );
        }
        const elapsedS = (performance.now() - started) / 1000;
        // Never more than the burst plus what refilled since the first request.
        expect(100 + count(more, 200)).toBeLessThanOrEqual(100 + Math.ceil(50 * elapsedS) + 1);
        const limited = more.find((r) => r.status === 429)!;
        expect(limited.body).toEqual({ error: 'TOO_MANY_REQUESTS', message: 'Rate limit exceeded' });
        expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(limited.headers.get('ratelimit-limit')).toBe('100');
        expect(limited.headers.get('ratelimit-remaining')).toBe('0');
        expect(Number(limited.headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(1);
      });

      it('when a key that spent its burst continues at 80% of the rate, then every request passes (a token bucket, not a window)', async () => {
        const auth = freshKey();
        // Spend the burst: at once until the bucket says no.
        for (;;) {
          const rs = await Promise.all(Array.from({ length: 40 }, () => g.call('GET', '/v1/mandates', auth)));
          if (rs.some((r) => r.status === 429)) break;
        }
        // Time is what refills the bucket: a few tokens' worth, so the first paced request finds one.
        await sleep(100);
        const rs = await paced(40, 2500, () => g.call('GET', '/v1/mandates', auth));
        expect(rs.length).toBe(100);
        expect(statuses(rs).filter((s) => s !== 200)).toEqual([]);
      });

      it('when a key sends its burst at once and then twice the rate, then no more than burst + 50/s pass over the whole run', async () => {
        const auth = freshKey();
        const started = performance.now();
        const burst = await Promise.all(
          Array.from({ length: 110 }, () => g.call('GET', '/v1/mandates', auth)),
        );
        const steady = await paced(100, 2000, () => g.call('GET', '/v1/mandates', auth));
        const elapsedS = (performance.now() - started) / 1000;
        const passed = count([...burst, ...steady], 200);
        expect(passed).toBeGreaterThanOrEqual(100);
        expect(passed).toBeLessThanOrEqual(100 + Math.ceil(50 * elapsedS) + 1);
        expect(count(steady, 429)).toBeGreaterThan(0);
      });

      it('when POST /v1/mandates goes past its burst (10), then the endpoint limit bites while the global one still lets GETs through', async () => {
        const auth = freshKey();
        const posts = await Promise.all(
          Array.from({ length: 25 }, () => g.call('POST', '/v1/mandates', auth)),
        );
        expect(count(posts, 200)).toBeGreaterThanOrEqual(10);
        const limited = posts.find((r) => r.status === 429);
        expect(limited).toBeDefined();
        expect(limited!.body.message).toBe('Rate limit exceeded');
        expect(limited!.headers.get('ratelimit-limit')).toBe('10');
        const get = await g.call('GET', '/v1/mandates', auth);
        expect(get.status).toBe(200);
        // Rejected POSTs were refunded to the global bucket: far more than 100 - 25 remain.
        expect(Number(get.headers.get('ratelimit-remaining'))).toBeGreaterThan(80);
      });

      it('when an enterprise key creates mandates, then its own numbers apply (burst 50)', async () => {
        const auth = freshKey('enterprise');
        const posts = await Promise.all(
          Array.from({ length: 50 }, () => g.call('POST', '/v1/mandates', auth)),
        );
        expect(statuses(posts)).toEqual(Array(50).fill(200));
        // Tokens refill at 25/s while requests are in flight; on a loaded machine send until one is refused.
        const more = await sendUntilRefused(() => g.call('POST', '/v1/mandates', auth), 60);
        expect(count(more, 429)).toBeGreaterThan(0);
      });

      it('when one beta key sends 120 evidence exports at once, then the export bucket (1/s, burst 5) lets only its burst and refill through', async () => {
        const auth = freshKey();
        const started = performance.now();
        const exports = await Promise.all(
          Array.from({ length: 120 }, () => g.call('GET', '/v1/mandates/mdt_1/evidence', auth)),
        );
        const elapsedS = (performance.now() - started) / 1000;
        expect(count(exports, 200)).toBeGreaterThanOrEqual(5);
        expect(count(exports, 200)).toBeLessThanOrEqual(5 + Math.ceil(elapsedS) + 1);
        const limited = exports.find((r) => r.status === 429);
        expect(limited?.body).toEqual({ error: 'TOO_MANY_REQUESTS', message: 'Rate limit exceeded' });
        expect(limited!.headers.get('ratelimit-limit')).toBe('5');
        // Its own bucket: the key's other reads go on.
        expect((await g.call('GET', '/v1/mandates', auth)).status).toBe(200);
      });

      it('when an enterprise key exports evidence, then its own numbers apply (burst 20)', async () => {
        const auth = freshKey('enterprise');
        const exports = await Promise.all(
          Array.from({ length: 20 }, () => g.call('GET', '/v1/mandates/mdt_1/evidence', auth)),
        );
        expect(statuses(exports)).toEqual(Array(20).fill(200));
        const more = await sendUntilRefused(() => g.call('GET', '/v1/mandates/mdt_1/evidence', auth), 60);
        expect(more.find((r) => r.status === 429)!.headers.get('ratelimit-limit')).toBe('20');
      });

      it('when a limited route answers, then it carries RateLimit-Limit, -Remaining and -Reset; an unlimited public route does not', async () => {
        const auth = freshKey();
        const r = await g.call('GET', '/v1/mandates', auth);
        expect(r.status).toBe(200);
        expect(r.headers.get('ratelimit-limit')).toBe('100');
        expect(r.headers.get('ratelimit-remaining')).toBe('99');
        // Present, whole seconds, and no longer than the bucket's minute: a missing header fails here.
        expect(r.headers.get('ratelimit-reset')).toMatch(/^\d+$/);
        expect(Number(r.headers.get('ratelimit-reset'))).toBeLessThanOrEqual(60);
        expect(r.headers.get('retry-after')).toBeNull();
        const open = await g.call('GET', '/v1/openapi.json');
        expect(open.status).toBe(200);
        expect(open.headers.get('ratelimit-limit')).toBeNull();
      });

      it('when the credential is rejected, then nothing is counted', async () => {
        const r = await g.call('GET', '/v1/mandates', `${TENANT}:nope`);
        expect(r.status).toBe(401);
        expect(r.headers.get('ratelimit-limit')).toBeNull();
      });

      it('when Redis is up, then /readyz reports the shared limiter ok', async () => {
        const r = await g.ready();
        expect(r).toMatchObject({ status: 200, body: { checks: { rate_limiter: 'ok' } } });
      });
    });

    describe('key creation (one budget for create and rotate)', () => {
      it('when creations and rotations together spend the apikeys.create burst, then both are 429', async () => {
        // A refill of one token per 100 s: nothing refills during the test, however slow the machine.
        const g = await startGateway({
          overrides: { beta: { endpoints: { 'apikeys.create': { rate: 0.01, burst: 2 } } } },
        });
        const auth = freshKey();
        const keys = `/v1/tenants/${TENANT}/api-keys`;
        expect((await g.call('POST', keys, auth)).status).toBe(200);
        expect((await g.call('POST', `${keys}/key_1/rotate`, auth)).status).toBe(200);
        const rotate = await g.call('POST', `${keys}/key_1/rotate`, auth);
        expect(rotate).toMatchObject({ status: 429, body: { message: 'Rate limit exceeded' } });
        expect((await g.call('POST', keys, auth)).status).toBe(429);
      });
    });

    describe('the monthly quota', () => {
      it.each(EACH_LIMITER)(
        'when the quota is spent (%s), then 429 "Monthly quota exceeded" with Retry-After to the next month (UTC); rate-limited requests do not count; the next month starts afresh',
        async (_label, redisPort) => {
          const { clock, g } = await startGatewayAt('2031-05-31T23:59:00.000Z', {
            redisPort,
            overrides: {
              beta: { monthly_quota: 4, endpoints: { 'mandates.create': { rate: 0.01, burst: 1 } } },
            },
          });
          const auth = freshKey();
          expect((await g.call('POST', '/v1/mandates', auth)).status).toBe(200);
          // Over the endpoint's limit: 429 for the rate, and not charged to the quota.
          const rate = await g.call('POST', '/v1/mandates', auth);
          expect(rate.body.message).toBe('Rate limit exceeded');
          for (let i = 0; i < 3; i++) expect((await g.call('GET', '/v1/mandates', auth)).status).toBe(200);

          const over = await g.call('GET', '/v1/mandates', auth);
          expect(over.status).toBe(429);
          expect(over.body).toEqual({ error: 'TOO_MANY_REQUESTS', message: 'Monthly quota exceeded' });
          expect(over.headers.get('retry-after')).toBe('60');
          expect(over.headers.get('ratelimit-limit')).toBe('4');
          expect(over.headers.get('ratelimit-remaining')).toBe('0');
          // Another key of the same tenant has its own quota.
          expect((await g.call('GET', '/v1/mandates', freshKey())).status).toBe(200);

          clock.set('2031-06-01T00:00:01.000Z');
          const june = await g.call('GET', '/v1/mandates', auth);
          expect(june.status).toBe(200);
        },
      );
    });

    describe('GET /v1/usage (this month, per key)', () => {
      it.each(EACH_LIMITER)(
        "when keys of a tenant made requests (%s), then GET /v1/usage answers the plan, its limits, each key's use this month and the days to reset",
        async (_label, redisPort) => {
          const { clock, g } = await startGatewayAt('2031-05-20T12:00:00.000Z', {
            redisPort,
            overrides: { enterprise: { monthly_quota: 100 } },
          });
          const busy = freshKey('enterprise');
          const quiet = freshKey('enterprise');
          for (let i = 0; i < 3; i++) expect((await g.call('GET', '/v1/mandates', busy)).status).toBe(200);
          expect((await g.call('GET', '/v1/mandates', quiet)).status).toBe(200);
          const idOf = (auth: string) => `key_${auth.split('.')[1]}`;

          const res = await g.call('GET', '/v1/usage', quiet);
          expect(res.status).toBe(200);
          // GET /v1/usage itself counts, as every request does: quiet has 2 by now.
          expect(res.body).toEqual({
            tenant_id: TENANT,
            plan: 'enterprise',
            limits: expect.objectContaining({ monthly_quota: 100, global: { rate: 200, burst: 400 } }),
            period: {
              month: '2031-05',
              start: '2031-05-01T00:00:00.000Z',
              reset_at: '2031-06-01T00:00:00.000Z',
              days_to_reset: 12,
            },
            usage: [
              { key_id: idOf(busy), used: 3, remaining: 97 },
              { key_id: idOf(quiet), used: 2, remaining: 98 },
            ],
            // Every day of May so far; today holds the tenant's 5 requests.
            daily: Array.from({ length: 20 }, (_, i) => ({
              date: `2031-05-${String(i + 1).padStart(2, '0')}`,
              used: i === 19 ? 5 : 0,
            })),
          });
          expect(res.body.limits.endpoints['mandates.create']).toEqual({ rate: 25, burst: 50 });

          // A new month: nothing counted yet but this call.
          clock.set('2031-06-01T00:00:01.000Z');
          const june = await g.call('GET', '/v1/usage', quiet);
          expect(june.body.period).toMatchObject({ month: '2031-06', days_to_reset: 30 });
          expect(june.body.usage).toEqual([{ key_id: idOf(quiet), used: 1, remaining: 99 }]);
          expect(june.body.daily).toEqual([{ date: '2031-06-01', used: 1 }]);
        },
      );

      it.each(EACH_LIMITER)(
        'when keys make requests on several days of the month (%s), then daily has each day of the tenant, rate-limited requests not counted',
        async (_label, redisPort) => {
          const { clock, g } = await startGatewayAt('2031-05-02T23:59:00.000Z', {
            redisPort,
            overrides: { beta: { endpoints: { 'mandates.create': { rate: 0.01, burst: 1 } } } },
          });
          const a = freshKey();
          const b = freshKey();
          expect((await g.call('POST', '/v1/mandates', a)).status).toBe(200);
          // Over the endpoint's burst: a 429, counted neither in the month nor in the day.
          expect((await g.call('POST', '/v1/mandates', a)).status).toBe(429);
          expect((await g.call('GET', '/v1/mandates', b)).status).toBe(200);

          clock.set('2031-05-04T00:00:01.000Z');
          for (let i = 0; i < 3; i++) expect((await g.call('GET', '/v1/mandates', b)).status).toBe(200);

          const res = await g.call('GET', '/v1/usage', a);
          expect(res.status).toBe(200);
          expect(res.body.daily).toEqual([
            { date: '2031-05-01', used: 0 },
            { date: '2031-05-02', used: 2 },
            { date: '2031-05-03', used: 0 },
            // b's 3 and this call of a's.
            { date: '2031-05-04', used: 4 },
          ]);
          const month = (res.body.usage as { used: number }[]).reduce((sum, u) => sum + u.used, 0);
          expect(month).toBe(6);

          // The last days of April are counted in April, not in May.
          clock.set('2031-04-30T12:00:00.000Z');
          expect((await g.call('GET', '/v1/mandates', b)).status).toBe(200);
          clock.set('2031-05-04T00:00:02.000Z');
          const again = await g.call('GET', '/v1/usage', a);
          expect(again.body.daily.map((d: { used: number }) => d.used)).toEqual([0, 2, 0, 5]);
        },
      );

      it('when a request is counted in Redis, then its day counter sits next to the month counter and expires in about 35 days', async () => {
        const prefix = `test:rl:${newId('req')}`;
        const g = await startGateway({ prefix, clock: fixedClock('2031-05-20T12:00:00.000Z') });
        const auth = freshKey();
        expect((await g.call('GET', '/v1/mandates', auth)).status).toBe(200);
        const caller = inKey(`${TENANT}:key_${auth.split('.')[1]}`);
        const client = redis.client();
        try {
          expect(await client.get(`${prefix}:quota:${caller}:2031-05`)).toBe('1');
          expect(await client.get(`${prefix}:day:${caller}:2031-05-20`)).toBe('1');
          const ttl = await client.ttl(`${prefix}:day:${caller}:2031-05-20`);
          expect(ttl).toBeGreaterThan(34 * 86_400);
          expect(ttl).toBeLessThanOrEqual(35 * 86_400);
        } finally {
          await client.quit();
        }
      });
    });

    describe('failed authentications, per client IP (docs/API.md, "Hardening")', () => {
      const WRONG = `${TENANT}:nokey.${'s3cr3t'.repeat(6)}`;
      const from = (ip: string) => ({ 'x-forwarded-for': ip });

      it('when an address fails more often than the limit, then each failure is logged without the secret and the next is 429 with Retry-After, while a valid key still passes there and another address gets in', async () => {
        const { logger, lines } = capturingLogger();
        const g = await startGateway({ authFailuresPerMinute: 3, trustProxy: true, logger });
        const ip = '203.0.113.7';
        for (let i = 0; i < 3; i++) {
          const r = await g.call('GET', '/v1/mandates', WRONG, { ...from(ip), 'x-request-id': `fail-${i}` });
          expect(r.status).toBe(401);
        }
        const over = await g.call('GET', '/v1/mandates', WRONG, from(ip));
        expect(over).toMatchObject({
          status: 429,
          body: {
            error: 'TOO_MANY_REQUESTS',
            message: 'Too many failed authentications from this address; retry later',
          },
        });
        expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(Number(over.headers.get('retry-after'))).toBeLessThanOrEqual(60);
        expect((await g.call('GET', '/v1/mandates', freshKey(), from(ip))).status).toBe(200);
        expect((await g.call('GET', '/v1/mandates', freshKey(), from('203.0.113.8'))).status).toBe(200);

        const failures = lines().filter((l) => l.msg === 'authentication failed');
        expect(failures).toHaveLength(4);
        expect(failures[0]).toMatchObject({
          level: 40,
          ip,
          requestId: 'fail-0',
          credential: 'api_key',
          reason: 'Invalid or missing API key',
        });
        const all = lines()
          .map((l) => JSON.stringify(l))
          .join('\n');
        expect(all).not.toContain('s3cr3t');
      });

      it('when the failures of one address reach two replicas, then the shared Redis counter blocks it on both', async () => {
        const prefix = `test:rl:${newId('req')}`;
        const a = await startGateway({ prefix, authFailuresPerMinute: 2, trustProxy: true });
        const b = await startGateway({ prefix, authFailuresPerMinute: 2, trustProxy: true });
        const ip = '198.51.100.9';
        expect((await a.call('GET', '/v1/mandates', 'operator-secret-for-tests', from(ip))).status).toBe(401);
        expect((await a.call('GET', '/v1/mandates', WRONG, from(ip))).status).toBe(401);
        expect((await b.call('GET', '/v1/mandates', WRONG, from(ip))).status).toBe(429);
        expect((await b.call('GET', '/v1/mandates', `${TENANT}:nokey.other`, from(ip))).status).toBe(429);
        expect((await b.call('GET', '/v1/mandates', freshKey(), from(ip))).status).toBe(200);
      });

      if (node) {
        it('when the minute since the first failure has passed, then the address may authenticate again', async () => {
          let t = Date.parse('2026-11-23T10:00:00.000Z');
          const g = await startGateway({
            redisPort: null,
            authFailuresPerMinute: 1,
            now: () => t,
            clock: { now: () => new Date(t) },
          });
          expect((await g.call('GET', '/v1/mandates', WRONG)).status).toBe(401);
          expect((await g.call('GET', '/v1/mandates', WRONG)).status).toBe(429);
          t += 30_000;
          expect((await g.call('GET', '/v1/mandates', WRONG)).status).toBe(429);
          t += 31_000;
          expect((await g.call('GET', '/v1/mandates', WRONG)).status).toBe(401);
        });
      }
    });

    if (node) {
      describe('a blocked address and the credentials that authenticated recently', () => {
        const WRONG = `${TENANT}:nokey.${'s3cr3t'.repeat(6)}`;
        const from = (ip: string) => ({ 'x-forwarded-for': ip });
        /** The test keys, each lookup counted, and any key revoked on demand (as identity would answer). */
        function countingKeys() {
          const revoked = new Set<string>();
          let lookups = 0;
          const resolver: KeyResolver = {
            resolve: async (secret) => {
              lookups++;
              return revoked.has(secret) ? null : keys.resolve(secret);
            },
            evict: () => undefined,
          };
          return {
            resolver,
            lookups: () => lookups,
            revoke: (auth: string) => revoked.add(auth.split(':')[1]!),
          };
        }
        async function blockedGateway(ip: string) {
          const counted = countingKeys();
          const g = await startGateway({
            authFailuresPerMinute: 2,
            trustProxy: true,
            redisPort: null,
            keys: counted.resolver,
          });
          const good = freshKey();
          expect((await g.call('GET', '/v1/mandates', good, from(ip))).status).toBe(200);
          for (let i = 0; i < 2; i++) await g.call('GET', '/v1/mandates', WRONG, from(ip));
          expect((await g.call('GET', '/v1/mandates', WRONG, from(ip))).status).toBe(429);
          return { g, good, ...counted };
        }

        it('when an address is over its failed-authentication limit, then a key that authenticated in the last 10 minutes still passes, and a key that failed there is 429 without another lookup', async () => {
          const ip = '203.0.113.20';
          const { g, good, lookups } = await blockedGateway(ip);
          expect((await g.call('GET', '/v1/mandates', good, from(ip))).status).toBe(200);
          const before = lookups();
          const stranger = await g.call('GET', '/v1/mandates', WRONG, from(ip));
          expect(stranger.status).toBe(429);
          expect(Number(stranger.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
          expect(lookups()).toBe(before);
        });

        it('when a key that authenticated recently is revoked, then a blocked address gets no pass for it', async () => {
          const ip = '203.0.113.21';
          const { g, good, revoke } = await blockedGateway(ip);
          revoke(good);
          expect((await g.call('GET', '/v1/mandates', good, from(ip))).status).not.toBe(200);
          // Forgotten once refused: from now on it is an unknown credential.
          expect((await g.call('GET', '/v1/mandates', good, from(ip))).status).toBe(429);
        });

        it('when the operator token is sent from a blocked address, then 429: a person chose it, so it never skips the limit', async () => {
          const ip = '203.0.113.22';
          const { g } = await blockedGateway(ip);
          const platform = await g.call('GET', '/v1/platform/tenants', 'operator-secret-for-tests', from(ip));
          expect(platform.status).toBe(429);
        });
      });
    }

    if (node) {
      describe('a blocked address lets every valid credential through (docs/API.md#authentication)', () => {
        const from = (ip: string) => ({ 'x-forwarded-for': ip });
        /** The test keys, each lookup counted. */
        function countingKeys() {
          let lookups = 0;
          const resolver: KeyResolver = {
            resolve: async (secret) => {
              lookups++;
              return keys.resolve(secret);
            },
            evict: () => undefined,
          };
          return { resolver, lookups: () => lookups };
        }
        async function blocked(ip: string) {
          const counted = countingKeys();
          const g = await startGateway({
            authFailuresPerMinute: 20,
            trustProxy: true,
            redisPort: null,
            keys: counted.resolver,
          });
          const good = freshKey();
          expect((await g.call('GET', '/v1/mandates', good, from(ip))).status).toBe(200);
          for (let i = 0; i < 20; i++) {
            const wrong = `${TENANT}:nokey.${randomUUID()}`;
            expect((await g.call('GET', '/v1/mandates', wrong, from(ip))).status).toBe(401);
          }
          expect((await g.call('GET', '/v1/mandates', `${TENANT}:nokey.x`, from(ip))).status).toBe(429);
          return { g, good, ...counted };
        }

        it('when an address has failed 20 times, then a freshly created key passes, and a recent key passes in every header form the API accepts', async () => {
          const ip = '203.0.113.40';
          const { g, good } = await blocked(ip);
          const secret = good.split(':')[1]!;
          const forms: Record<string, string>[] = [
            { authorization: `bearer ${good}` },
            { authorization: `BEARER  ${good} ` },
            { 'x-api-key': good },
            { 'x-api-key': secret },
          ];
          for (const headers of forms) {
            const r = await g.call('GET', '/v1/mandates', undefined, { ...from(ip), ...headers });
            expect({ form: Object.keys(headers)[0], status: r.status }).toEqual({
              form: Object.keys(headers)[0],
              status: 200,
            });
          }
          expect((await g.call('GET', '/v1/mandates', freshKey(), from(ip))).status).toBe(200);
          const fresh = freshKey().split(':')[1]!;
          const xApiKey = await g.call('GET', '/v1/mandates', undefined, { ...from(ip), 'x-api-key': fresh });
          expect(xApiKey.status).toBe(200);
        });

        it('when a blocked address keeps guessing, then failing credentials are 429, a repeated one is looked up once, and distinct ones are looked up at most BLOCKED_LOOKUPS times a minute', async () => {
          const ip = '203.0.113.41';
          const { g, lookups } = await blocked(ip);
          const before = lookups();
          const stale = `${TENANT}:nokey.stale`;
          for (let i = 0; i < 5; i++)
            expect((await g.call('GET', '/v1/mandates', stale, from(ip))).status).toBe(429);
          expect(lookups()).toBe(before + 1);
          for (let i = 0; i < 3 * BLOCKED_LOOKUPS; i++) {
            const guess = `${TENANT}:nokey.${randomUUID()}`;
            expect((await g.call('GET', '/v1/mandates', guess, from(ip))).status).toBe(429);
          }
          expect(lookups()).toBe(before + BLOCKED_LOOKUPS);
          // Another address is not concerned.
          expect((await g.call('GET', '/v1/mandates', freshKey(), from('203.0.113.42'))).status).toBe(200);
        });

        it('when a blocked address has spent its lookups, then a key created after that still passes by the list of usable keys, and guesses stay 429 without a lookup', async () => {
          const ip = '203.0.113.43';
          // Identity's list: the keys "created" below, each by its hash prefix, listed from when it was created.
          const created: { tenant_id: string; key_id: string; created_at: string; hash_prefix: string }[] =
            [];
          let reads = 0;
          const usableKeys = new UsableKeys(
            async (query) => {
              reads++;
              const since = 'created_since' in query && query.created_since ? query.created_since : '';
              return { as_of: new Date().toISOString(), keys: created.filter((k) => k.created_at >= since) };
            },
            pino({ level: 'silent' }),
            Date.now,
            // A catch-up per guess: short here, so that the test does not wait a second for each.
            50,
          );
          const counted = countingKeys();
          const g = await startGateway({
            authFailuresPerMinute: 20,
            trustProxy: true,
            redisPort: null,
            keys: counted.resolver,
            usableKeys,
          });
          for (let i = 0; i < 20; i++)
            await g.call('GET', '/v1/mandates', `${TENANT}:nokey.${randomUUID()}`, from(ip));
          // The 21st failure blocks the address; then its lookups are spent.
          for (let i = 0; i < 1 + BLOCKED_LOOKUPS; i++) {
            const guess = `${TENANT}:nokey.${randomUUID()}`;
            expect((await g.call('GET', '/v1/mandates', guess, from(ip))).status).toBe(429);
          }
          const lookupsSpent = counted.lookups();
          const guess = await g.call('GET', '/v1/mandates', `${TENANT}:nokey.${randomUUID()}`, from(ip));
          expect(guess.status).toBe(429);
          expect(counted.lookups()).toBe(lookupsSpent);
          // A key created now, never seen by this gateway: listed by the catch-up its first request waits for.
          const fresh = freshKey();
          const secret = fresh.split(':')[1]!;
          created.push({
            tenant_id: TENANT,
            key_id: `key_${secret.split('.')[1]}`,
            created_at: new Date().toISOString(),
            hash_prefix: hashPrefixOf(secret),
          });
          const readsBefore = reads;
          expect((await g.call('GET', '/v1/mandates', fresh, from(ip))).status).toBe(200);
          expect(reads).toBe(readsBefore + 1);
          expect(
            (await g.call('GET', '/v1/mandates', undefined, { ...from(ip), 'x-api-key': secret })).status,
          ).toBe(200);
        });
      });
    }

    if (node) {
      describe('the operator token on /metrics', () => {
        it('when /metrics is asked with a wrong token, then 401, the failure is logged without the token and counted; over the limit 429, the right token included', async () => {
          const { logger, lines } = capturingLogger();
          const g = await startGateway({
            authFailuresPerMinute: 2,
            trustProxy: true,
            logger,
            redisPort: null,
          });
          const ip = '203.0.113.30';
          const headers = { 'x-forwarded-for': ip };
          expect((await g.call('GET', '/metrics', 'operator-secret-for-tests', headers)).status).toBe(200);
          for (let i = 0; i < 2; i++) {
            const wrong = await g.call('GET', '/metrics', `guess-${i}-0p3r4t0r`, {
              ...headers,
              'x-request-id': `m-${i}`,
            });
            expect(wrong).toMatchObject({
              status: 401,
              body: { error: 'UNAUTHORIZED', message: 'Invalid operator credentials' },
            });
          }
          expect((await g.call('GET', '/metrics', 'guess-2-0p3r4t0r', headers)).status).toBe(429);
          expect((await g.call('GET', '/metrics', 'operator-secret-for-tests', headers)).status).toBe(429);
          // Another address is not concerned; no credential at all is still the route table's 404.
          expect((await g.call('GET', '/metrics', 'operator-secret-for-tests')).status).toBe(200);
          expect((await g.call('GET', '/metrics', undefined, headers)).status).toBe(404);

          const failures = lines().filter((l) => l.msg === 'authentication failed');
          expect(failures).toHaveLength(3);
          expect(failures[0]).toMatchObject({
            level: 40,
            ip,
            requestId: 'm-0',
            route: '/metrics',
            credential: 'opaque_bearer',
          });
          expect(
            lines()
              .map((l) => JSON.stringify(l))
              .join('\n'),
          ).not.toContain('0p3r4t0r');
        });
      });
    }

    describe('onboarding, per client IP (burst 5)', () => {
      // The plan's 2/s would refill a token while a loaded machine sends the six: slowed, counts are exact.
      const exact: PlanOverrides = { onboarding: { rate: 0.01, burst: 5 } };

      it('when one address sends 5 at once, then they pass and the 6th is 429; X-Forwarded-For is ignored unless TRUST_PROXY', async () => {
        const g = await startGateway({ routes: ROUTES_WITH_ONBOARDING, overrides: exact });
        const rs = await Promise.all(
          Array.from({ length: 5 }, () => g.call('POST', '/v1/onboarding/request')),
        );
        expect(statuses(rs)).toEqual([200, 200, 200, 200, 200]);
        const sixth = await g.call('POST', '/v1/onboarding/request', undefined, {
          'x-forwarded-for': '203.0.113.7',
        });
        expect(sixth.status).toBe(429);
        expect(sixth.body.message).toBe('Rate limit exceeded');
        expect(sixth.headers.get('ratelimit-limit')).toBe('5');
        expect(Number(sixth.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      });

      it('when TRUST_PROXY is on, then each X-Forwarded-For client (its last entry) has its own budget', async () => {
        const g = await startGateway({ routes: ROUTES_WITH_ONBOARDING, trustProxy: true, overrides: exact });
        const from = (ip: string) =>
          g.call('POST', '/v1/onboarding/request', undefined, { 'x-forwarded-for': `10.9.9.9, ${ip}` });
        const a = await Promise.all(Array.from({ length: 6 }, () => from('203.0.113.1')));
        expect(count(a, 200)).toBe(5);
        expect(count(a, 429)).toBe(1);
        expect((await from('203.0.113.2')).status).toBe(200);
      });
    });

    describe('the JWKS and the status lists, one bucket per client IP (docs/DECISIONS.md, "Status lists (v3)")', () => {
      // Slowed so no token refills while the requests are sent: counts are exact.
      const exact: PlanOverrides = {
        public_reads: { rate: 0.01, burst: 4 },
        onboarding: { rate: 0.01, burst: 5 },
      };
      const jwks = '/v1/.well-known/jwks.json';
      const list = '/v1/status-lists/sl_01jaaaaaaaaaaaaaaaaaaaaaaa';

      it('when one address fetches the keys and a list past the burst, then 429 with Retry-After; its onboarding budget is its own', async () => {
        const g = await startGateway({ routes: ROUTES_WITH_ONBOARDING, overrides: exact });
        const first = [await g.call('GET', jwks), await g.call('GET', list), await g.call('GET', jwks)];
        expect(statuses(first)).toEqual([200, 200, 200]);
        expect(first[0]!.headers.get('ratelimit-limit')).toBe('4');
        expect(first.map((r) => r.headers.get('ratelimit-remaining'))).toEqual(['3', '2', '1']);
        expect((await g.call('GET', list)).status).toBe(200);
        for (const path of [list, jwks]) {
          const refused = await g.call('GET', path);
          expect(refused.status).toBe(429);
          expect(refused.body).toEqual({ error: 'TOO_MANY_REQUESTS', message: 'Rate limit exceeded' });
          expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        }
        expect((await g.call('POST', '/v1/onboarding/request')).status).toBe(200);
      });

      it('when TRUST_PROXY is on, then each client behind the proxy has its own budget; the OpenAPI document has none', async () => {
        const g = await startGateway({ routes: ROUTES_WITH_ONBOARDING, trustProxy: true, overrides: exact });
        const from = (ip: string) => g.call('GET', jwks, undefined, { 'x-forwarded-for': `10.9.9.9, ${ip}` });
        const a = await Promise.all(Array.from({ length: 5 }, () => from('203.0.113.1')));
        expect(count(a, 200)).toBe(4);
        expect(count(a, 429)).toBe(1);
        expect((await from('203.0.113.2')).status).toBe(200);
        const open = await g.call('GET', '/v1/openapi.json', undefined, { 'x-forwarded-for': '203.0.113.1' });
        expect(open.status).toBe(200);
      });
    });

    if (node) {
      describe('embedded mode (in-memory limiter, same numbers)', () => {
        it('when a fresh key sends 100 at once, then all pass and more are 429; /readyz is ok', async () => {
          const g = await startGateway({ redisPort: null });
          const auth = freshKey();
          const first = await Promise.all(
            Array.from({ length: 100 }, () => g.call('GET', '/v1/mandates', auth)),
          );
          expect(statuses(first)).toEqual(Array(100).fill(200));
          const more = await sendUntilRefused(() => g.call('GET', '/v1/mandates', auth), 60);
          expect(count(more, 429)).toBeGreaterThan(0);
          expect((await g.ready()).body.checks.rate_limiter).toBe('ok');
        });
      });
    }

    describe('replicas and Redis outages', () => {
      // One token per 100 s: nothing refills during a test, so counts are exact.
      const slow: PlanOverrides = { beta: { global: { rate: 0.01, burst: 5 } } };

      /**
       * Five requests of one key split 3/2 over two gateways take the whole burst; the key is then
       * refused on both. Not necessarily at the sixth request: a replica decides a request on its own
       * view of the shared counter while half the burst would remain (redis-backend.ts,
       * decidesLocally), and adds that pass to Redis within FLUSH_MS. So when one gateway's first
       * answer says "4 left" and its second request comes while the other gateway's requests are
       * still on their way to Redis, that pass is not in the counter yet and a sixth request on the
       * other gateway may still pass: at most half a burst more than the bucket holds for two replicas
       * (the documented bound), owed afterwards. Once the shared counter holds every pass, both refuse.
       */
      async function expectOneBudget(
        a: Awaited<ReturnType<typeof startGateway>>,
        b: Awaited<ReturnType<typeof startGateway>>,
        auth: string,
        prefix: string,
      ) {
        const burst = 5;
        const rs = await Promise.all([
          ...[1, 2, 3].map(() => a.call('GET', '/v1/mandates', auth)),
          ...[1, 2].map(() => b.call('GET', '/v1/mandates', auth)),
        ]);
        expect(statuses(rs)).toEqual([200, 200, 200, 200, 200]);
        const sixth = [await a.call('GET', '/v1/mandates', auth), await b.call('GET', '/v1/mandates', auth)];
        const passed = burst + count(sixth, 200);
        expect(passed).toBeLessThanOrEqual(burst + Math.floor(burst / 2));
        // The month's counter counts every pass once, on whichever replica it was decided.
        const caller = inKey(`${TENANT}:key_${auth.split('.')[1]}`);
        const client = redis.client();
        try {
          await eventually(
            async () => {
              const found = await redis.keys(`${prefix}:quota:${caller}:*`);
              const values = await Promise.all(found.map((k) => client.get(k)));
              const counted = values.reduce((n, v) => n + Number(v), 0);
              return counted === passed ? true : undefined;
            },
            10_000,
            `the shared counter to hold the ${passed} passes`,
          );
        } finally {
          await client.quit();
        }
        expect((await a.call('GET', '/v1/mandates', auth)).status).toBe(429);
        expect((await b.call('GET', '/v1/mandates', auth)).status).toBe(429);
      }

      it('when two gateways share one Redis, then they share one budget', async () => {
        const prefix = `test:rl:${newId('req')}`;
        const a = await startGateway({ prefix, overrides: slow });
        const b = await startGateway({ prefix, overrides: slow });
        await expectOneBudget(a, b, freshKey(), prefix);
      });

      it('when two gateways let a key through on their own views, then together they pass at most half a burst more than the bucket holds, and both refuse afterwards', async () => {
        const prefix = `test:rl:${newId('req')}`;
        // Burst 20, no refill during the test: every pass is counted against the same 20.
        const twenty: PlanOverrides = { beta: { global: { rate: 0.01, burst: 20 } } };
        const a = await startGateway({ prefix, overrides: twenty });
        const b = await startGateway({ prefix, overrides: twenty });
        const auth = freshKey();
        // a asks Redis once (a fresh key): its view is now "19 left".
        expect((await a.call('GET', '/v1/mandates', auth)).status).toBe(200);
        // b spends the rest one by one; its own view is current, so it stops at the bucket's end.
        let fromB = 0;
        while ((await b.call('GET', '/v1/mandates', auth)).status === 200) fromB++;
        expect(fromB).toBe(19);
        // a's view predates b's spending: it lets requests through on its own until its view is
        // down to half the burst, then asks Redis, which refuses.
        const fromA = await Promise.all(
          Array.from({ length: 30 }, () => a.call('GET', '/v1/mandates', auth)),
        );
        const total = 1 + fromB + count(fromA, 200);
        console.info(`two replicas, burst 20: ${total} passed (bound 30)`);
        expect(total).toBeLessThanOrEqual(20 + 20 / 2);
        // What went over is owed: both refuse now.
        expect((await a.call('GET', '/v1/mandates', auth)).status).toBe(429);
        expect((await b.call('GET', '/v1/mandates', auth)).status).toBe(429);
      });

      if (node) {
        it("when a gateway's first answer for a key comes back while its next requests are still on their way to Redis, then it counts them: one gateway alone never passes more than the burst", async () => {
          const gate = await startTcpProxy(node.host, node.port);
          const backend = new RedisLimiterBackend(
            `redis://${node.host}:${gate.port}`,
            pino({ level: 'silent' }),
          );
          const prefix = `test:rl:${newId('req')}`;
          prefixes.push(prefix);
          const burst = 5;
          const part = (key: string): AtomicPart => ({
            kind: 'rate',
            rlKey: `${prefix}:global:${key}`,
            bucket: { rate: 0.01, burst },
          });
          const passes = (decision: Promise<RateLimiterRes[]>) =>
            decision.then(([res]) => res!.consumedPoints <= burst);
          try {
            await backend.ready();
            // The script's first use on a connection sends it whole: done before the count starts.
            await backend.consumeAll([part('warm-up')]);
            gate.holdToTarget();
            const sentBefore = gate.chunksToTarget;
            // A fresh key, no view yet: Redis decides the first request (its write waits at the proxy)...
            const first = passes(backend.consumeAll([part('k')]));
            await eventually(
              async () => (gate.chunksToTarget > sentBefore ? true : undefined),
              10_000,
              'the first request at the proxy',
            );
            // ...and the next four, sent before its answer comes back. ioredis runs one auto-pipeline at a
            // time: it writes them the moment the first answer arrives, before that answer resolves.
            const following = Array.from({ length: 4 }, () => passes(backend.consumeAll([part('k')])));
            gate.releaseToTarget(1);
            // So the first answer says "4 left" while the four, held at the proxy now, will take them all.
            expect(await first).toBe(true);
            const sixth = passes(backend.consumeAll([part('k')]));
            gate.releaseToTarget();
            const passed = [true, ...(await Promise.all(following)), await sixth].filter(Boolean).length;
            expect(passed).toBe(burst);
          } finally {
            await backend.close();
            await gate.close();
          }
        });
      }

      if (node) {
        it('when a key is far from its limits, then most requests are decided without a Redis round trip of their own', async () => {
          // Every command the gateway sends, decoded: a request that asks Redis to decide runs the limits
          // script with take = 1; the background flush of what was let through runs it with take = 0.
          // Counting the take = 1 calls, not writes, keeps the assertion independent of how slow the
          // machine is (a slow request only means more, smaller flushes).
          const tap = await startRedisTap(`redis://${node.host}:${node.port}`);
          taps.push(tap);
          const g = await startGateway({
            overrides: { beta: { global: { rate: 1000, burst: 1000 } } },
            redisPort: Number(new URL(tap.url).port),
          });
          const auth = freshKey();
          expect((await g.call('GET', '/v1/mandates', auth)).status).toBe(200);
          const asked = () =>
            tap.commands.filter((c) => /^evalsha$|^eval$/i.test(c[0]!) && c[3 + Number(c[2])] === '1').length;
          const before = asked();
          // The fresh key's first request had no view to decide on: it asked Redis (and the decoder sees it).
          expect(before).toBeGreaterThanOrEqual(1);
          const n = 40;
          for (let i = 0; i < n; i++) expect((await g.call('GET', '/v1/mandates', auth)).status).toBe(200);
          const decidedByRedis = asked() - before;
          console.info(`far from its limits: ${decidedByRedis} of ${n} requests asked Redis`);
          expect(decidedByRedis).toBeLessThan(n / 4);
        });
      }

      if (node) {
        it('when the connection to Redis is cut, then the gateway keeps serving with a per-process limiter, logs it once and /readyz says degraded; when Redis is back, limits are shared again', async () => {
          const prefix = `test:rl:${newId('req')}`;
          const { logger, lines } = capturingLogger();
          const viaProxy = await startGateway({ prefix, overrides: slow, redisPort: proxy!.port, logger });
          const direct = await startGateway({ prefix, overrides: slow });
          expect((await viaProxy.ready()).body.checks.rate_limiter).toBe('ok');

          proxy!.cut();
          const degraded = await eventually(
            async () => {
              const r = await viaProxy.ready();
              return r.body.checks.rate_limiter.startsWith('degraded') ? r : undefined;
            },
            10_000,
            'degraded readiness',
          );
          expect(degraded).toMatchObject({
            status: 200,
            body: {
              status: 'ready',
              checks: { rate_limiter: 'degraded: per-process limiter (Redis unreachable)' },
            },
          });

          // Still serving, and still limiting with the same numbers, in this process only.
          const fallbacksBefore = await counterValue('rate_limit_redis_fallbacks_total');
          const rejectionsBefore = await counterValue('rate_limit_rejections_total', { bucket: 'global' });
          const auth = freshKey();
          const rs = await Promise.all(
            Array.from({ length: 5 }, () => viaProxy.call('GET', '/v1/mandates', auth)),
          );
          expect(statuses(rs)).toEqual([200, 200, 200, 200, 200]);
          expect((await viaProxy.call('GET', '/v1/mandates', auth)).status).toBe(429);
          // Every one of those six decisions was taken in process, and the sixth is a counted rejection.
          expect(await counterValue('rate_limit_redis_fallbacks_total')).toBe(fallbacksBefore + 6);
          expect(await counterValue('rate_limit_rejections_total', { bucket: 'global' })).toBe(
            rejectionsBefore + 1,
          );
          // The other replica, still on Redis, never saw those requests.
          expect((await direct.call('GET', '/v1/mandates', auth)).status).toBe(200);

          // What is under test is that nothing more is logged: three more reconnect attempts are
          // refused by the cut (counted by the proxy), and the warning above stays the only one.
          const refused = proxy!.refusedConnections;
          await eventually(
            () => (proxy!.refusedConnections >= refused + 3 ? true : undefined),
            30_000,
            'three more refused reconnect attempts',
          );
          const warnings = lines().filter((l) => l.msg.startsWith('Redis unreachable'));
          expect(warnings.length).toBe(1);

          proxy!.restore();
          await eventually(
            async () => ((await viaProxy.ready()).body.checks.rate_limiter === 'ok' ? true : undefined),
            10_000,
            'the limiter back on Redis',
          );
          expect(lines().filter((l) => l.msg.startsWith('Redis reachable again')).length).toBe(1);
          // 'ready' is the connection's; on a loaded machine a command right after it can still time out
          // (commandTimeout) and fall back. Redis is back for the budget check once a request is decided there.
          await eventually(
            async () => {
              const fallbacks = await counterValue('rate_limit_redis_fallbacks_total');
              await viaProxy.call('GET', '/v1/mandates', freshKey());
              return (await counterValue('rate_limit_redis_fallbacks_total')) === fallbacks
                ? true
                : undefined;
            },
            10_000,
            'a request decided on Redis again',
          );

          const fallbacks = await counterValue('rate_limit_redis_fallbacks_total');
          await expectOneBudget(viaProxy, direct, freshKey(), prefix);
          // Every decision of the budget check was taken on Redis.
          expect(await counterValue('rate_limit_redis_fallbacks_total')).toBe(fallbacks);
        });
      }

      if (node) {
        it('when a request passes three limiters (global, endpoint, quota), then the limiter costs at most one Redis round trip per request', async () => {
          proxy!.restore();
          const big: PlanOverrides = {
            beta: {
              global: { rate: 1000, burst: 1000 },
              endpoints: { 'mandates.create': { rate: 1000, burst: 1000 } },
            },
          };
          const g = await startGateway({ overrides: big, redisPort: proxy!.port });
          const auth = freshKey();
          // Warm up: the first use of each script on a connection may cost a SCRIPT LOAD/NOSCRIPT exchange.
          for (let i = 0; i < 3; i++) await g.call('POST', '/v1/mandates', auth);

          proxy!.resetCounters();
          const n = 40;
          for (let i = 0; i < n; i++) expect((await g.call('POST', '/v1/mandates', auth)).status).toBe(200);
          const sequential = proxy!.chunksToTarget / n;

          proxy!.resetCounters();
          const concurrent = await Promise.all(
            Array.from({ length: n }, () => g.call('POST', '/v1/mandates', auth)),
          );
          expect(count(concurrent, 200)).toBe(n);
          const perRequestConcurrent = proxy!.chunksToTarget / n;

          // Reported for the README: writes to Redis per request.
          console.info(
            `limiter round trips per request: sequential ${sequential.toFixed(2)}, ${n} concurrent ${perRequestConcurrent.toFixed(2)}`,
          );
          expect(sequential).toBeLessThanOrEqual(1);
          expect(perRequestConcurrent).toBeLessThanOrEqual(1);

          // Control: the same three limiters awaited one after another do show as three round trips,
          // so the count above measures round trips, not how the kernel happened to batch bytes. Through
          // a proxy of its own: g's background flush of the concurrent requests (FLUSH_MS after its last
          // local decision) may still be on its way, and must not be counted as the control's.
          const controlProxy = await startTcpProxy(node.host, node.port);
          const backend = new RedisLimiterBackend(
            `redis://${node.host}:${controlProxy.port}`,
            pino({ level: 'silent' }),
          );
          try {
            await backend.ready();
            const prefix = `test:rl:${newId('req')}`;
            prefixes.push(prefix);
            const three = [
              backend.bucket(`${prefix}:a`, { rate: 100, burst: 100 }),
              backend.bucket(`${prefix}:b`, { rate: 100, burst: 100 }),
              backend.quota(`${prefix}:q`, 100),
            ];
            for (const l of three) await l.consume('k', 1, { customDuration: 60 });
            controlProxy.resetCounters();
            for (let i = 0; i < 10; i++)
              for (const l of three) await l.consume('k', 1, { customDuration: 60 });
            expect(controlProxy.chunksToTarget / 10).toBe(3);
          } finally {
            // Also when the count is off: a client left open would reconnect to the closed proxy forever.
            await backend.close();
            await controlProxy.close();
          }
        });
      }
    });
  });
}
