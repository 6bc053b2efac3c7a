import { eventDataIssues, type EventType } from '@mandate/shared/events';
import { MONGO_TARGET } from '@mandate/shared/testing';
import { mongoStackEnv, type MongoStackEnv } from '../support/mongo-standin';
import { contractViolations, startRecordingProxy, type RecordingProxy } from '../support/contract-recorder';
import {
  apiClient,
  createPaymentsMandate,
  createTenant,
  eventually,
  startService,
  startStack,
  type ServiceProcess,
  type Stack,
} from '../support/stack';

/**
 * The README's walk-through, end to end: five separate processes, the real RabbitMQ (audit
 * events) and Redis, talking HTTP with internal tokens; once on the in-memory stores, once with
 * mandates, identity and audit on their Mongo adapters (the MongoDB stand-in unless MONGO_URL is given).
 */
describe.each([
  { stores: 'in-memory stores', mongo: false },
  { stores: `Mongo adapters on ${MONGO_TARGET}`, mongo: true },
])('end to end: five processes on real RabbitMQ and Redis, $stores', ({ mongo }) => {
  let stack: Stack;
  let api: ReturnType<typeof apiClient>;
  let proxy: RecordingProxy;
  let databases: MongoStackEnv | undefined;
  const restarted: ServiceProcess[] = [];

  beforeAll(async () => {
    databases = mongo ? mongoStackEnv('e2e') : undefined;
    stack = await startStack(databases?.env ?? {});
    // Every answer of the run passes through it, and is checked against its route's contract at the end.
    proxy = await startRecordingProxy(stack.gateway.url);
    api = apiClient(proxy.url);
  }, 90_000);

  afterAll(async () => {
    await proxy?.close();
    await stack?.stop();
    for (const service of restarted) await service.stop();
    await databases?.drop();
  }, 30_000);

  it('when a tenant walks the mandate lifecycle, then verify follows it and the audit trail holds every step, isolated per tenant', async () => {
    const a = await createTenant(stack, { name: 'Tenant A' });
    const b = await createTenant(stack, { name: 'Tenant B' });
    const authA = a.auth;
    const authB = b.auth;

    const created = await createPaymentsMandate(api, authA);
    expect(created.status).toBe(201);
    const mandateId: string = created.body.id;
    expect(created.body).toMatchObject({ state: 'ACTIVE', version: 1, tenant_id: a.tenant.id });

    const verifyBody = { mandate_id: mandateId, action: 'payments:create' };
    const allow = await api('POST', '/v1/verify', { auth: authA, body: verifyBody });
    expect(allow.body).toMatchObject({ decision: 'ALLOW', reason: 'OK', mandate_version: 1 });

    const suspended = await api('POST', `/v1/mandates/${mandateId}/suspend`, {
      auth: authA,
      body: { reason: 'holiday' },
    });
    expect(suspended.body).toMatchObject({ state: 'SUSPENDED', version: 2 });

    const deny = await api('POST', '/v1/verify', { auth: authA, body: verifyBody });
    expect(deny.body).toMatchObject({
      decision: 'DENY',
      reason: 'MANDATE_SUSPENDED',
      mandate_state: 'SUSPENDED',
      mandate_version: 2,
    });

    const revoked = await api('POST', `/v1/mandates/${mandateId}/revoke`, { auth: authA });
    expect(revoked.body).toMatchObject({ state: 'REVOKED', version: 3 });
    const again = await api('POST', `/v1/mandates/${mandateId}/revoke`, { auth: authA });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ error: 'CONFLICT', message: 'Mandate is already revoked' });

    const types = await eventually(
      async () => {
        const res = await api('GET', '/v1/events?limit=100', { auth: authA });
        const seen = new Set<string>((res.body.data as { type: string }[]).map((e) => e.type));
        const wanted = [
          'MANDATE_CREATED',
          'MANDATE_SUSPENDED',
          'MANDATE_REVOKED',
          'VERIFICATION_PERFORMED',
          'API_CALL',
        ];
        // API_CALL events are batched separately from the lifecycle events: wait for the revoke's own record too.
        const revokeCallSeen = (res.body.data as { type: string; data: { route?: string } }[]).some(
          (e) => e.type === 'API_CALL' && e.data.route === '/v1/mandates/:id/revoke',
        );
        return wanted.every((t) => seen.has(t)) && revokeCallSeen ? res.body.data : undefined;
      },
      15_000,
      'the lifecycle events in /v1/events',
    );
    const apiCall = (types as { type: string; actor: { key_id?: string }; data: { route?: string } }[]).find(
      (e) => e.type === 'API_CALL' && e.data.route === '/v1/mandates/:id/revoke',
    );
    expect(apiCall).toMatchObject({
      actor: { type: 'api_key', key_id: a.api_key.key_id },
      data: { key_id: a.api_key.key_id },
    });
    // Each event the services produced holds to its type's data schema (docs/API.md, "Events").
    const offSchema = (types as { type: EventType; data: unknown }[])
      .map((e) => [e.type, eventDataIssues(e.type, e.data)] as const)
      .filter(([, issues]) => issues.length > 0);
    expect(offSchema).toEqual([]);

    const byResource = await api(
      'GET',
      `/v1/events?resource_id=${mandateId}&type=MANDATE_CREATED,MANDATE_REVOKED`,
      { auth: authA },
    );
    expect(byResource.body.data.map((e: { type: string }) => e.type).sort()).toEqual([
      'MANDATE_CREATED',
      'MANDATE_REVOKED',
    ]);

    // Tenant B: A's mandate does not exist, and none of A's events are visible.
    const foreign = await api('GET', `/v1/mandates/${mandateId}`, { auth: authB });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ error: 'NOT_FOUND', message: expect.any(String) });
    expect((await api('POST', '/v1/verify', { auth: authB, body: verifyBody })).status).toBe(404);
    const bEvents = await api('GET', `/v1/events?resource_id=${mandateId}`, { auth: authB });
    expect(bEvents.body.data).toEqual([]);
    const bAll = await api('GET', '/v1/events?limit=100', { auth: authB });
    expect(bAll.body.data.every((e: { tenant_id: string }) => e.tenant_id === b.tenant.id)).toBe(true);
    const foreignEvent = await api(
      'GET',
      `/v1/events/${apiCall ? (apiCall as unknown as { id: string }).id : 'evt_x'}`,
      { auth: authB },
    );
    expect(foreignEvent.status).toBe(404);
  }, 60_000);

  it.each(['mandates', 'verify', 'identity', 'audit'] as const)(
    'when the %s service is called directly without an internal token, then it answers 401',
    async (name) => {
      const direct = apiClient(stack.services[name].url);
      const paths = {
        mandates: '/v1/mandates',
        verify: '/v1/verify',
        identity: '/internal/v1/keys/resolve',
        audit: '/v1/events',
      };
      const method = name === 'mandates' || name === 'audit' ? 'GET' : 'POST';
      const res = await direct(method, paths[name], {
        headers: { 'x-tenant-id': 'tnt_01jaaaaaaaaaaaaaaaaaaaaaaa' },
        body: method === 'POST' ? {} : undefined,
      });
      expect(res.status).toBe(401);
      expect(Object.keys(res.body)).toEqual(['error', 'message']);
    },
  );

  it('when the public API is misused, then every error is exactly {error, message}', async () => {
    const bad = [
      await api('GET', '/v1/mandates'),
      await api('GET', '/v1/does-not-exist'),
      await api('DELETE', '/v1/verify'),
      await api('POST', '/v1/platform/tenants', { body: { name: 'x' } }),
    ];
    expect(bad.map((r) => r.status)).toEqual([401, 404, 405, 401]);
    for (const r of bad) expect(Object.keys(r.body).sort()).toEqual(['error', 'message']);
  });

  if (mongo) {
    it('when mandates, identity and audit are restarted, then the tenant, its key, its mandate and its events are still there', async () => {
      const tenant = await createTenant(stack, { name: 'Durable' });
      const created = await api('POST', '/v1/mandates', {
        auth: tenant.auth,
        body: {
          principal: 'user_d',
          delegate: { id: 'agent_d', type: 'agent' },
          scope: { actions: ['x:*'] },
        },
      });
      expect(created.status).toBe(201);
      await eventually(async () => {
        const res = await api('GET', `/v1/events?resource_id=${created.body.id}`, { auth: tenant.auth });
        return res.body.data?.length > 0 ? true : undefined;
      });

      const common = {
        INTERNAL_TOKEN_SECRET: stack.internalSecret,
        AMQP_URL: process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
        AMQP_NAMESPACE: stack.namespace,
        REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      };
      for (const name of ['mandates', 'identity', 'audit'] as const) {
        const old = stack.services[name];
        await old.stop();
        restarted.push(
          await startService(
            name,
            {
              ...common,
              ...databases!.env[name],
              PORT: new URL(old.url).port,
              ...(name === 'audit' ? { MANDATES_URL: stack.services.mandates.url } : {}),
              ...(name === 'mandates' ? { LOCAL_SIGNING_KEY: stack.signingKey } : {}),
            },
            `${name} (restarted)`,
          ),
        );
      }

      // The gateway resolves the key through identity, reads the mandate from mandates, events from audit.
      const read = await api('GET', `/v1/mandates/${created.body.id}`, { auth: tenant.auth });
      expect(read.status).toBe(200);
      expect(read.body).toEqual(created.body);
      const events = await api('GET', `/v1/events?resource_id=${created.body.id}`, { auth: tenant.auth });
      expect(events.body.data.map((e: { type: string }) => e.type)).toContain('MANDATE_CREATED');
    }, 90_000);
  }

  it('when every answer of this run is checked against the contract of its route, then each status is declared and each body matches', () => {
    expect(proxy.records.length).toBeGreaterThan(10);
    expect(contractViolations(proxy.records)).toEqual([]);
  });
});
