import { newId } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { InProcessBus, type AuditEvent } from '@mandate/shared/events';
import { connectMongo } from '@mandate/shared/data';
import { buildOpenApiDocument } from '@mandate/shared/contract';
import { type RunningServer } from '@mandate/shared/http';
import {
  MONGO_TARGET,
  MONGO_URL,
  callService,
  callerFor,
  testDatabaseName,
  testTokens,
} from '@mandate/shared/testing';
import { createApp, type AuditService } from '../src/app';
import { auditConfig } from '../src/config';
import { contract } from '../src/contract';
import { MemoryEventStore } from '../src/store/memory-event-store';
import { wire } from '../src/wiring';
import { eventStoreAdapters } from './adapters';
import { buildAuditEvent } from './factories';

const logger = createLogger('audit-test', 'silent');

describe.each(eventStoreAdapters())('audit events API (in-process bus, $name store)', (adapter) => {
  let bus: InProcessBus;
  let service: AuditService;
  let server: RunningServer;
  let owned: Awaited<ReturnType<typeof adapter.create>>;

  beforeAll(async () => {
    bus = new InProcessBus(logger);
    owned = await adapter.create();
    service = createApp({ store: owned.store, source: bus, tokens: testTokens, logger });
    server = await service.start();
  });
  afterAll(async () => {
    await service.stop();
    await bus.close();
    await owned.close();
  });

  /** Publishes as a producer would and waits until the consumer has written everything. */
  async function publish(...events: AuditEvent[]): Promise<AuditEvent[]> {
    await bus.publish(events);
    await bus.drain();
    return events;
  }
  const get = (tenant: string | null, path: string) =>
    callService(server.url, 'GET', path, { caller: callerFor(tenant) });
  const idsOf = (res: { body: { data: AuditEvent[] } }) => res.body.data.map((e) => e.id);

  it('when events are published, then GET /v1/events lists them newest first', async () => {
    const tenant = newId('tnt');
    const [a, b, c] = await publish(
      buildAuditEvent(tenant),
      buildAuditEvent(tenant),
      buildAuditEvent(tenant),
    );
    const res = await get(tenant, '/v1/events');
    expect(res).toMatchObject({ status: 200, body: { data: [c, b, a], has_more: false, next_cursor: null } });
  });

  it('when the same event is published twice, then it is listed once', async () => {
    const tenant = newId('tnt');
    const event = buildAuditEvent(tenant);
    await publish(event, event);
    await publish(event);
    expect(idsOf(await get(tenant, '/v1/events'))).toEqual([event.id]);
  });

  it('when paging with limit and cursor, then every event appears exactly once, newest first', async () => {
    const tenant = newId('tnt');
    const events = await publish(...Array.from({ length: 7 }, () => buildAuditEvent(tenant)));
    const seen: string[] = [];
    let path = '/v1/events?limit=3';
    for (;;) {
      const res = await get(tenant, path);
      expect(res.status).toBe(200);
      seen.push(...idsOf(res));
      // A producer keeps writing while the client pages.
      await publish(buildAuditEvent(tenant));
      // A page has a cursor exactly when there is more.
      expect(res.body.next_cursor === null).toBe(!res.body.has_more);
      if (!res.body.has_more) break;
      path = `/v1/events?limit=3&cursor=${encodeURIComponent(res.body.next_cursor)}`;
    }
    expect(seen).toEqual(events.map((e) => e.id).reverse());
  });

  it('when filtering by a comma list of types, then only those types are listed', async () => {
    const tenant = newId('tnt');
    const [created, revoked, call] = await publish(
      buildAuditEvent(tenant, { type: 'MANDATE_CREATED' }),
      buildAuditEvent(tenant, { type: 'MANDATE_REVOKED' }),
      buildAuditEvent(tenant, { type: 'API_CALL' }),
    );
    expect(idsOf(await get(tenant, '/v1/events?type=MANDATE_REVOKED'))).toEqual([revoked!.id]);
    expect(idsOf(await get(tenant, '/v1/events?type=MANDATE_CREATED,API_CALL'))).toEqual([
      call!.id,
      created!.id,
    ]);
    expect(idsOf(await get(tenant, '/v1/events?type=MANDATE_CREATED%2C%20API_CALL'))).toEqual([
      call!.id,
      created!.id,
    ]);
  });

  it('when filtering by key_id and resource_id, then only matching events are listed', async () => {
    const tenant = newId('tnt');
    const key = newId('key');
    const mandate = newId('mdt');
    const [byKey, aboutMandate] = await publish(
      buildAuditEvent(tenant, { keyId: key }),
      buildAuditEvent(tenant, { resource: { type: 'mandate', id: mandate } }),
      buildAuditEvent(tenant),
    );
    expect(idsOf(await get(tenant, `/v1/events?key_id=${key}`))).toEqual([byKey!.id]);
    expect(idsOf(await get(tenant, `/v1/events?resource_id=${mandate}`))).toEqual([aboutMandate!.id]);
    expect(idsOf(await get(tenant, `/v1/events?resource_id=${mandate}&key_id=${key}`))).toEqual([]);
  });

  it('when filtering by since and until, then since is inclusive and until exclusive', async () => {
    const tenant = newId('tnt');
    const at = (iso: string) => buildAuditEvent(tenant, { occurredAt: new Date(iso) });
    const [e1, e2, e3] = await publish(
      at('2026-01-01T00:00:00.000Z'),
      at('2026-01-02T00:00:00.000Z'),
      at('2026-01-03T00:00:00.000Z'),
    );
    expect(idsOf(await get(tenant, '/v1/events?since=2026-01-02T00:00:00.000Z'))).toEqual([e3!.id, e2!.id]);
    expect(idsOf(await get(tenant, '/v1/events?until=2026-01-02T00:00:00.000Z'))).toEqual([e1!.id]);
    expect(
      idsOf(await get(tenant, '/v1/events?since=2026-01-02T00:00:00Z&until=2026-01-03T00:00:00Z')),
    ).toEqual([e2!.id]);
  });

  it("when exclude_dashboard_reads=true, then the dashboard's own reads are left out; false or no parameter lists every event", async () => {
    const tenant = newId('tnt');
    const call = (method: string, via?: string) =>
      buildAuditEvent(tenant, {
        type: 'API_CALL',
        resource: null,
        data: { method, route: '/v1/events', path: '/v1/events', status: 200, ...(via ? { via } : {}) },
      });
    const [read, write, program, before, change] = await publish(
      call('GET', 'dashboard'),
      call('DELETE', 'dashboard'),
      call('GET', 'api'),
      call('GET'),
      buildAuditEvent(tenant),
    );
    expect(idsOf(await get(tenant, '/v1/events?exclude_dashboard_reads=true'))).toEqual(
      [change, before, program, write].map((e) => e!.id),
    );
    const every = [change, before, program, write, read].map((e) => e!.id);
    expect(idsOf(await get(tenant, '/v1/events?exclude_dashboard_reads=false'))).toEqual(every);
    expect(idsOf(await get(tenant, '/v1/events'))).toEqual(every);
    // With the other filters; and another tenant's reads never show up in either answer.
    expect(idsOf(await get(tenant, '/v1/events?type=API_CALL&exclude_dashboard_reads=true&limit=2'))).toEqual(
      [before, program].map((e) => e!.id),
    );
    expect(idsOf(await get(newId('tnt'), '/v1/events?exclude_dashboard_reads=false'))).toEqual([]);
  });

  it.each([
    [
      'exclude_dashboard_reads neither true nor false',
      '/v1/events?exclude_dashboard_reads=yes',
      'exclude_dashboard_reads',
    ],
    [
      'exclude_dashboard_reads in capitals',
      '/v1/events?exclude_dashboard_reads=TRUE',
      'exclude_dashboard_reads',
    ],
    [
      'an empty exclude_dashboard_reads',
      '/v1/events?exclude_dashboard_reads=',
      'exclude_dashboard_reads must be one of: true, false',
    ],
    [
      'a repeated exclude_dashboard_reads',
      '/v1/events?exclude_dashboard_reads=true&exclude_dashboard_reads=true',
      'exclude_dashboard_reads',
    ],
    [
      'an unknown event type',
      '/v1/events?type=MANDATE_CREATED,NOT_A_TYPE',
      'type: unknown event type NOT_A_TYPE',
    ],
    ['an empty type list', '/v1/events?type=,', 'type: must name at least one event type'],
    ['a repeated type parameter', '/v1/events?type=API_CALL&type=MANDATE_CREATED', 'type must be a string'],
    ['since that is not a datetime', '/v1/events?since=yesterday', 'since: must be an ISO 8601 datetime'],
    ['until that is not a datetime', '/v1/events?until=2026-13-01', 'until: must be an ISO 8601 datetime'],
    ['limit 0', '/v1/events?limit=0', 'limit must be at least 1'],
    ['limit 101', '/v1/events?limit=101', 'limit must be at most 100'],
    ['a limit that is not a number', '/v1/events?limit=ten', 'limit must be a number'],
    ['a garbage cursor', '/v1/events?cursor=garbage', 'cursor is invalid'],
    ['an unknown query parameter', '/v1/events?tenant_id=tnt_other&limit=5', 'tenant_id is not allowed'],
  ])('when the query has %s, then it is a 400 naming the problem', async (_what, path, message) => {
    const res = await get(newId('tnt'), path);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'BAD_REQUEST', message: expect.stringContaining(message) });
  });

  describe('GET /v1/events/verification-stats', () => {
    const verification = (tenant: string, iso: string, decision: string) =>
      buildAuditEvent(tenant, {
        type: 'VERIFICATION_PERFORMED',
        occurredAt: new Date(iso),
        data: { decision, reason: decision === 'ALLOW' ? 'OK' : 'ACTION_NOT_PERMITTED' },
      });

    it('when verifications were recorded, then each UTC hour of the window counts its ALLOW and DENY; other types, other tenants and events outside the window are not counted', async () => {
      const tenant = newId('tnt');
      await publish(
        verification(tenant, '2026-03-01T10:00:00.000Z', 'ALLOW'),
        verification(tenant, '2026-03-01T10:59:59.999Z', 'ALLOW'),
        verification(tenant, '2026-03-01T10:30:00.000Z', 'DENY'),
        verification(tenant, '2026-03-01T12:15:00.000Z', 'DENY'),
        // Outside [since, until): before, and at until.
        verification(tenant, '2026-03-01T09:59:59.999Z', 'ALLOW'),
        verification(tenant, '2026-03-01T13:00:00.000Z', 'ALLOW'),
        buildAuditEvent(tenant, { occurredAt: new Date('2026-03-01T10:10:00.000Z') }),
        verification(newId('tnt'), '2026-03-01T10:10:00.000Z', 'ALLOW'),
      );
      const res = await get(
        tenant,
        '/v1/events/verification-stats?bucket=hour&since=2026-03-01T10:20:00Z&until=2026-03-01T13:00:00Z',
      );
      expect(res.status).toBe(200);
      // since is rounded down to its hour: 10:00 on.
      expect(res.body).toEqual({
        bucket: 'hour',
        since: '2026-03-01T10:00:00.000Z',
        until: '2026-03-01T13:00:00.000Z',
        buckets: [
          { start: '2026-03-01T10:00:00.000Z', allow: 2, deny: 1 },
          { start: '2026-03-01T11:00:00.000Z', allow: 0, deny: 0 },
          { start: '2026-03-01T12:00:00.000Z', allow: 0, deny: 1 },
        ],
      });
    });

    it('when asked per day without until, then the window runs to now and today is the last bucket', async () => {
      const tenant = newId('tnt');
      const now = new Date();
      const yesterday = new Date(now.getTime() - 86_400_000);
      // The window is [since, until) with until = the service's now: an event stamped with this very
      // millisecond is outside it when the request is answered within the same millisecond.
      const justBefore = new Date(now.getTime() - 1);
      await publish(
        verification(tenant, justBefore.toISOString(), 'ALLOW'),
        verification(tenant, yesterday.toISOString(), 'DENY'),
        verification(tenant, yesterday.toISOString(), 'DENY'),
      );
      const since = new Date(now.getTime() - 13 * 86_400_000).toISOString();
      const res = await get(tenant, `/v1/events/verification-stats?bucket=day&since=${since}`);
      expect(res.status).toBe(200);
      expect(res.body.buckets).toHaveLength(14);
      expect(res.body.buckets.at(-1)).toEqual({
        start: `${justBefore.toISOString().slice(0, 10)}T00:00:00.000Z`,
        allow: 1,
        deny: 0,
      });
      expect(res.body.buckets.at(-2)).toMatchObject({ allow: 0, deny: 2 });
    });

    it('when asked without a query, then the window is the last 24 hours per hour, the current hour last', async () => {
      const tenant = newId('tnt');
      // A millisecond before the request: the window ends at the service's now, exclusive.
      const now = new Date(Date.now() - 1);
      await publish(verification(tenant, now.toISOString(), 'DENY'));
      const res = await get(tenant, '/v1/events/verification-stats');
      expect(res.status).toBe(200);
      expect(res.body.bucket).toBe('hour');
      expect(res.body.buckets).toHaveLength(24);
      expect(res.body.buckets.at(-1)).toEqual({
        start: `${now.toISOString().slice(0, 13)}:00:00.000Z`,
        allow: 0,
        deny: 1,
      });
    });

    it.each([
      ['an unknown bucket', '?bucket=week&since=2026-01-01T00:00:00Z', 'bucket'],
      [
        'until before since',
        '?bucket=hour&since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z',
        'until must be after since',
      ],
      [
        'more than 168 hours',
        '?bucket=hour&since=2026-01-01T00:00:00Z&until=2026-01-08T00:00:01Z',
        'at most 168',
      ],
      [
        'more than 400 days',
        '?bucket=day&since=2024-01-01T00:00:00Z&until=2026-01-01T00:00:00Z',
        'at most 400',
      ],
      [
        'an unknown query parameter',
        '?bucket=hour&since=2026-01-01T00:00:00Z&type=API_CALL',
        'type is not allowed',
      ],
    ])('when the query has %s, then it is a 400 naming the problem', async (_what, query, message) => {
      const res = await get(newId('tnt'), `/v1/events/verification-stats${query}`);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'BAD_REQUEST', message: expect.stringContaining(message) });
    });
  });

  it('when an event is fetched by id, then it is returned; an unknown id is a 404', async () => {
    const tenant = newId('tnt');
    const [event] = await publish(
      buildAuditEvent(tenant, { type: 'VERIFICATION_PERFORMED', data: { decision: 'ALLOW' } }),
    );
    expect(await get(tenant, `/v1/events/${event!.id}`)).toMatchObject({ status: 200, body: event });
    expect(await get(tenant, `/v1/events/${newId('evt')}`)).toMatchObject({
      status: 404,
      body: { error: 'NOT_FOUND', message: 'Event not found' },
    });
  });

  it("when tenant B reads, then it sees none of tenant A's events and gets 404 for one by id", async () => {
    const tenantA = newId('tnt');
    const tenantB = newId('tnt');
    const [event] = await publish(buildAuditEvent(tenantA), buildAuditEvent(tenantA));
    expect(await get(tenantB, '/v1/events')).toMatchObject({
      status: 200,
      body: { data: [], has_more: false },
    });
    expect(idsOf(await get(tenantB, `/v1/events?resource_id=${event!.resource!.id}`))).toEqual([]);
    expect(await get(tenantB, `/v1/events/${event!.id}`)).toMatchObject({
      status: 404,
      body: { error: 'NOT_FOUND', message: 'Event not found' },
    });
  });

  it('when a platform event without tenant is published, then no tenant can read it', async () => {
    const tenant = newId('tnt');
    const [platform] = await publish(
      buildAuditEvent(null, {
        type: 'ONBOARDING_REQUESTED',
        resource: { type: 'onboarding', id: newId('onb') },
      }),
    );
    expect(idsOf(await get(tenant, '/v1/events?type=ONBOARDING_REQUESTED'))).toEqual([]);
    expect((await get(tenant, `/v1/events/${platform!.id}`)).status).toBe(404);
  });

  it('when the caller has no tenant, then it is a 401', async () => {
    expect(await get(null, '/v1/events')).toMatchObject({ status: 401, body: { error: 'UNAUTHORIZED' } });
  });

  it('when called without an internal token or with a forged one, then it is a 401', async () => {
    const none = await callService(server.url, 'GET', '/v1/events', { caller: null });
    expect(none).toMatchObject({
      status: 401,
      body: { error: 'UNAUTHORIZED', message: 'Missing internal token' },
    });
    const forged = await callService(server.url, 'GET', `/v1/events/${newId('evt')}`, {
      caller: null,
      headers: { 'x-internal-token': 'not.a.token', 'x-tenant-id': newId('tnt') },
    });
    expect(forged).toMatchObject({
      status: 401,
      body: { error: 'UNAUTHORIZED', message: 'Invalid internal token' },
    });
  });

  it('when POST /v1/events is called, then it is a 405 with Allow: GET', async () => {
    const res = await callService(server.url, 'POST', '/v1/events', {
      caller: callerFor(newId('tnt')),
      body: {},
    });
    expect(res.status).toBe(405);
    expect(res.body).toEqual({ error: 'METHOD_NOT_ALLOWED', message: expect.any(String) });
    expect(res.headers.get('allow')).toBe('GET');
    expect(
      (
        await callService(server.url, 'DELETE', `/v1/events/${newId('evt')}`, {
          caller: callerFor(newId('tnt')),
        })
      ).status,
    ).toBe(405);
  });

  it('when an unknown path is called, then it is a 404 in the envelope', async () => {
    expect(await get(newId('tnt'), '/v1/nothing-here')).toMatchObject({
      status: 404,
      body: { error: 'NOT_FOUND', message: 'Route not found' },
    });
  });

  it('when /healthz and /readyz are called without a token, then they report the consumer and store', async () => {
    expect(await callService(server.url, 'GET', '/healthz', { caller: null })).toMatchObject({
      status: 200,
      body: { status: 'ok' },
    });
    expect(await callService(server.url, 'GET', '/readyz', { caller: null })).toMatchObject({
      status: 200,
      body: { status: 'ready', checks: { consumer: 'ok', store: 'ok' } },
    });
  });
});

describe('audit service lifecycle', () => {
  it('when stopped right after events were published, then the consumer finishes them before the server closes', async () => {
    const bus = new InProcessBus(logger);
    const store = new MemoryEventStore();
    const service = createApp({ store, source: bus, tokens: testTokens, logger });
    await service.start();
    const tenant = newId('tnt');
    const events = Array.from({ length: 20 }, () => buildAuditEvent(tenant));
    await bus.publish(events);
    await service.stop();
    expect(await store.list(tenant, { limit: 100 })).toHaveLength(20);
  });

  it('when the store is down, then /readyz answers 503 naming it', async () => {
    const bus = new InProcessBus(logger);
    const store = new MemoryEventStore();
    store.ping = async () => {
      throw new Error('connection refused');
    };
    const service = createApp({ store, source: bus, tokens: testTokens, logger });
    const server = await service.start();
    try {
      expect(await callService(server.url, 'GET', '/readyz', { caller: null })).toMatchObject({
        status: 503,
        body: { status: 'not_ready', checks: { consumer: 'ok', store: 'down: connection refused' } },
      });
    } finally {
      await service.stop();
    }
  });

  it('when the consumer cannot start, then start() fails and nothing keeps listening', async () => {
    const source = {
      kind: 'rabbitmq' as const,
      start: async () => Promise.reject(new Error('broker unreachable')),
      startBatched: async () => Promise.reject(new Error('broker unreachable')),
      stop: async () => undefined,
    };
    const service = createApp({ store: new MemoryEventStore(), source, tokens: testTokens, logger });
    await expect(service.start()).rejects.toThrow('broker unreachable');
    await service.stop();
  });
});

describe('audit wiring and contract', () => {
  /** Wired with MONGO_URL on a database of its own, and the test's own connection to look into it; close() drops it. */
  async function wiredOnMongo(overrides: Parameters<typeof wire>[2]) {
    const database = testDatabaseName('audit_wiring');
    const wired = await wire(
      auditConfig({ INTERNAL_TOKEN_SECRET: 'x'.repeat(32), MONGO_URL: MONGO_URL!, MONGO_DB: database }),
      logger,
      overrides,
    );
    const check = await connectMongo(MONGO_URL!, database, logger);
    const close = async () => {
      await wired.close();
      await check.dropDatabase();
      await check.close();
    };
    return { wired, check, close };
  }

  it('when no AMQP_URL or MONGO_URL is set, then the shared bus override and a memory store are used', async () => {
    const bus = new InProcessBus(logger);
    const wired = await wire(auditConfig({ INTERNAL_TOKEN_SECRET: 'x'.repeat(32) }), logger, { source: bus });
    expect(wired.deps.source).toBe(bus);
    expect(wired.deps.store.kind).toBe('memory');
    await wired.close();
  });

  it(`when MONGO_URL and MONGO_DB are set, then events are stored in that database on ${MONGO_TARGET}`, async () => {
    const bus = new InProcessBus(logger);
    const { wired, check, close } = await wiredOnMongo({ source: bus });
    try {
      expect(wired.deps.store.kind).toBe('mongo');
      const event = buildAuditEvent(newId('tnt'));
      await wired.deps.store.insert(event);
      expect(await check.db!.collection('events').countDocuments({ _id: event.id as never })).toBe(1);
    } finally {
      await close();
      await bus.close();
    }
  });

  it(`when MONGO_URL is set and a store override is passed too, then the variable wins (${MONGO_TARGET})`, async () => {
    const bus = new InProcessBus(logger);
    const override = new MemoryEventStore();
    const { wired, close } = await wiredOnMongo({ source: bus, store: override });
    try {
      expect(wired.deps.store).not.toBe(override);
      expect(wired.deps.store.kind).toBe('mongo');
    } finally {
      await close();
      await bus.close();
    }
  });

  it('when AMQP_URL is set and a source override is passed too, then the variable wins', async () => {
    const bus = new InProcessBus(logger);
    // Nothing connects before the app starts its consumer, so no broker is needed here.
    const wired = await wire(
      auditConfig({ INTERNAL_TOKEN_SECRET: 'x'.repeat(32), AMQP_URL: 'amqp://127.0.0.1:1' }),
      logger,
      { source: bus },
    );
    try {
      expect(wired.deps.source).not.toBe(bus);
      expect(wired.deps.source.kind).toBe('rabbitmq');
    } finally {
      await wired.close();
      await bus.close();
    }
  });

  it('when INTERNAL_TOKEN_SECRET is missing and no tokens are passed, then wiring fails loudly', async () => {
    await expect(wire(auditConfig(), logger)).rejects.toThrow('INTERNAL_TOKEN_SECRET: is required');
  });

  it('when config is parsed from an empty environment, then the documented defaults apply', () => {
    expect(auditConfig()).toMatchObject({ PORT: 8084, AUDIT_PREFETCH: 200, AMQP_NAMESPACE: 'mandate' });
    expect(() => auditConfig({ AUDIT_PREFETCH: '0' })).toThrow();
  });

  it('when the OpenAPI document is built, then the event paths, the verification stats, the evidence export and the webhook endpoints are in it', () => {
    const doc = buildOpenApiDocument(contract);
    expect(Object.keys(doc.paths ?? {})).toEqual([
      '/v1/events',
      '/v1/events/verification-stats',
      '/v1/events/{id}',
      '/v1/mandates/{id}/evidence',
      '/v1/audit/checkpoints',
      '/v1/audit/checkpoints/latest',
      '/v1/events/{id}/inclusion-proof',
      '/v1/audit/consistency-proof',
      '/v1/webhook-endpoints',
      '/v1/webhook-endpoints/{id}',
      '/v1/webhook-endpoints/{id}/rotate-secret',
      '/v1/webhook-endpoints/{id}/test',
      '/v1/webhook-endpoints/{id}/deliveries',
      '/v1/webhook-endpoints/{id}/deliveries/{deliveryId}/retry',
      '/v1/webhook-endpoints/{id}/stats',
      '/v1/webhook-endpoints/{id}/replay',
    ]);
  });
});
