import Redis from 'ioredis';
import { newId } from '@mandate/shared/core';
import { keysOf, startRedisTap, type RedisTap } from '../support/redis-tap';
import {
  REDIS_URL,
  apiClient,
  createPaymentsMandate,
  createTenant,
  startStack,
  type Stack,
} from '../support/stack';

/**
 * REDIS_PREFIX is the one namespace of every Redis key: the five processes reach Redis through a
 * tap that decodes every command they send, and after a walk through every Redis-backed feature
 * (limits, quota and per-day usage, failed authentications, Idempotency-Key records, mandate
 * snapshots written by mandates and read by verify) each key any command named starts with the
 * stack's prefix. The tap sees only this stack's connections, so other runs on the same server
 * cannot blur the result.
 */
describe('end to end: every Redis key of every service under REDIS_PREFIX', () => {
  let tap: RedisTap;
  let stack: Stack;
  let api: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    tap = await startRedisTap(REDIS_URL);
    stack = await startStack({ all: { REDIS_URL: tap.url } });
    api = apiClient(stack.gateway.url);
  }, 180_000);

  afterAll(async () => {
    await stack?.stop();
    await tap?.close();
  }, 30_000);

  it('when the walk-through runs, then every key any process named starts with the prefix, and SCAN by the prefix finds what they wrote', async () => {
    const prefix = stack.redisPrefix;
    const tenant = await createTenant(stack, { name: 'Namespaced' });
    const idempotencyKey = newId('req');
    const create = () =>
      api('POST', '/v1/mandates', {
        auth: tenant.auth,
        headers: { 'idempotency-key': idempotencyKey },
        body: {
          principal: 'user_n',
          delegate: { id: 'agent_n', type: 'agent' },
          scope: { actions: ['x:*'] },
        },
      });
    const created = await create();
    expect(created.status).toBe(201);
    const replayed = await create();
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    const id: string = created.body.id;
    const verifyBody = { mandate_id: id, action: 'x:read' };
    expect((await api('POST', '/v1/verify', { auth: tenant.auth, body: verifyBody })).body.decision).toBe(
      'ALLOW',
    );
    const suspended = await api('POST', `/v1/mandates/${id}/suspend`, {
      auth: tenant.auth,
      body: { reason: 'r' },
    });
    expect(suspended.status).toBe(200);
    expect((await api('POST', '/v1/verify', { auth: tenant.auth, body: verifyBody })).body.decision).toBe(
      'DENY',
    );
    expect((await createPaymentsMandate(api, tenant.auth)).status).toBe(201);
    expect((await api('GET', `/v1/mandates/${id}/evidence`, { auth: tenant.auth })).status).toBe(200);
    expect((await api('GET', '/v1/usage', { auth: tenant.auth })).status).toBe(200);
    const onboarding = await api('POST', '/v1/onboarding/request', {
      body: { organization_name: 'Namespaced Ltd', contact_email: 'ops@namespaced.example.com' },
    });
    expect(onboarding.status).toBe(202);
    expect((await api('GET', '/v1/.well-known/jwks.json')).status).toBe(200);
    expect((await api('GET', '/v1/mandates', { auth: `${tenant.tenant.id}:msk_wrong` })).status).toBe(401);

    const { keys, patterns } = await keysOf(REDIS_URL, tap.commands);
    expect([...keys].filter((k) => !k.startsWith(prefix))).toEqual([]);
    expect([...patterns].filter((p) => !p.startsWith(prefix))).toEqual([]);
    // Not vacuous: every key space was used, each under its own part of the prefix.
    for (const space of [
      'rl:global:',
      'rl:quota:',
      'rl:day:',
      'rl:authfail:',
      'rl:onboarding:',
      'rl:public_reads:',
      'idem:',
      'snapshot:',
    ])
      expect([...keys].some((k) => k.startsWith(prefix + space))).toBe(true);

    // What an operator would remove after the run (docs/OPERATIONS.md): SCAN by the prefix finds the writes.
    const redis = new Redis(REDIS_URL);
    try {
      const found: string[] = [];
      let cursor = '0';
      do {
        const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
        cursor = next;
        found.push(...batch);
      } while (cursor !== '0');
      expect(found.some((k) => k.startsWith(`${prefix}snapshot:${tenant.tenant.id}:`))).toBe(true);
      expect(found.some((k) => k.startsWith(`${prefix}idem:${tenant.tenant.id}:`))).toBe(true);
    } finally {
      redis.disconnect();
    }
  }, 60_000);
});
