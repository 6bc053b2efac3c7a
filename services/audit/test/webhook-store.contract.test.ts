import { newId } from '@mandate/shared/core';
import {
  anyEvent,
  describeStoreContract,
  memoryAdapter,
  mongoAdapter,
  walkPages,
} from '@mandate/shared/testing';
import { MemoryWebhookStore } from '../src/webhooks/memory-webhook-store';
import { MongoWebhookStore } from '../src/webhooks/mongo-webhook-store';
import type { WebhookDelivery, WebhookEndpoint } from '../src/webhooks/webhook';
import type { WebhookStore } from '../src/webhooks/webhook-store';
import { buildDelivery } from './factories';

const adapters = [
  memoryAdapter<WebhookStore>(() => new MemoryWebhookStore()),
  mongoAdapter<WebhookStore>('webhooks', async (connection) => {
    const store = new MongoWebhookStore(connection);
    await store.init();
    return store;
  }),
];

const T0 = new Date('2026-11-20T10:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

function endpoint(tenantId: string, over: Partial<WebhookEndpoint> = {}): WebhookEndpoint {
  return {
    id: newId('whe'),
    tenant_id: tenantId,
    url: 'https://hooks.example.com/in',
    description: null,
    event_types: ['*'],
    status: 'ENABLED',
    disabled_reason: null,
    failing_since: null,
    secrets: [{ sealed: 'v1.a.b.c', expires_at: null }],
    slot: 0,
    version: 1,
    created_at: T0.toISOString(),
    updated_at: T0.toISOString(),
    ...over,
  };
}

const delivery = (e: WebhookEndpoint, over: Partial<WebhookDelivery> = {}) =>
  buildDelivery(e.tenant_id, e.id, T0.toISOString(), over);

const attempt = (ok: boolean) => ({
  attempted_at: T0.toISOString(),
  status_code: ok ? 200 : 500,
  error: ok ? null : 'HTTP 500',
  duration_ms: 12,
  response_body: ok ? 'ok' : null,
  manual: false,
});

describeStoreContract<WebhookStore>('WebhookStore', adapters, (getStore) => {
  /** A new tenant's endpoint, stored. */
  const storedEndpoint = async (over: Partial<WebhookEndpoint> = {}) => {
    const e = endpoint(newId('tnt'), over);
    await getStore().insertEndpoint(e, []);
    return e;
  };

  it('when an endpoint is inserted, then get returns it equal, and another tenant gets null', async () => {
    const tenant = newId('tnt');
    const e = endpoint(tenant, {
      description: 'orders',
      event_types: ['MANDATE_CREATED', 'MANDATE_REVOKED'],
    });
    expect(await getStore().insertEndpoint(e, [])).toBe(true);
    expect(await getStore().getEndpoint(tenant, e.id)).toEqual(e);
    expect(await getStore().getEndpoint(newId('tnt'), e.id)).toBeNull();
  });

  it('when two endpoints of a tenant take the same slot, then the second insert is refused; another tenant may use it', async () => {
    const tenant = newId('tnt');
    expect(await getStore().insertEndpoint(endpoint(tenant, { slot: 3 }), [])).toBe(true);
    expect(await getStore().insertEndpoint(endpoint(tenant, { slot: 3 }), [])).toBe(false);
    expect(await getStore().insertEndpoint(endpoint(newId('tnt'), { slot: 3 }), [])).toBe(true);
    expect(await getStore().usedSlots(tenant)).toEqual([3]);
  });

  it('when an endpoint is deleted, then its slot is free, it is gone from reads, and its event waits in the outbox', async () => {
    const e = await storedEndpoint({ slot: 5 });
    const tenant = e.tenant_id;
    const event = anyEvent({
      type: 'WEBHOOK_ENDPOINT_DELETED',
      tenantId: tenant,
      resource: null,
      data: {},
    });
    expect(await getStore().deleteEndpoint({ ...e, version: 2 }, [event])).toBe(false);
    expect(await getStore().deleteEndpoint(e, [event])).toBe(true);
    expect(await getStore().getEndpoint(tenant, e.id)).toBeNull();
    expect(await getStore().usedSlots(tenant)).toEqual([]);
    expect(await getStore().endpointsByIds([e.id])).toEqual([]);
    expect((await getStore().pendingEvents(1000)).map((x) => x.id)).toContain(event.id);
    await getStore().markSent([event.id]);
    expect((await getStore().pendingEvents(1000)).map((x) => x.id)).not.toContain(event.id);
    expect(await getStore().insertEndpoint(endpoint(tenant, { slot: 5 }), [])).toBe(true);
  });

  it('when an update names a stale version, then nothing changes; at the current version it applies and bumps it', async () => {
    const e = await storedEndpoint();
    const tenant = e.tenant_id;
    const later = at(60_000).toISOString();
    expect(
      await getStore().updateEndpoint({ ...e, version: 7 }, { url: 'https://x.example.com/' }, later, []),
    ).toBeNull();
    const updated = await getStore().updateEndpoint(
      e,
      {
        url: 'https://x.example.com/',
        failing_since: later,
        secrets: [
          { sealed: 's2', expires_at: null },
          { sealed: 's1', expires_at: later },
        ],
      },
      later,
      [],
    );
    expect(updated).toEqual({
      ...e,
      url: 'https://x.example.com/',
      failing_since: later,
      secrets: [
        { sealed: 's2', expires_at: null },
        { sealed: 's1', expires_at: later },
      ],
      version: 2,
      updated_at: later,
    });
    expect(await getStore().getEndpoint(tenant, e.id)).toEqual(updated);
    expect(
      await getStore().updateEndpoint(
        { ...e, tenant_id: newId('tnt'), version: 2 },
        { url: 'https://y.example.com/' },
        later,
        [],
      ),
    ).toBeNull();
  });

  it('when listing endpoints with a cursor, then every one appears once, newest first, and enabledEndpoints skips disabled ones', async () => {
    const tenant = newId('tnt');
    const made: WebhookEndpoint[] = [];
    for (let slot = 0; slot < 5; slot++) {
      const e = endpoint(tenant, { slot, status: slot === 2 ? 'DISABLED' : 'ENABLED' });
      await getStore().insertEndpoint(e, []);
      made.push(e);
    }
    const seen = await walkPages(2, (page) => getStore().listEndpoints(tenant, page));
    expect(seen).toEqual(made.map((e) => e.id).reverse());
    const enabled = (await getStore().enabledEndpoints(tenant)).map((e) => e.id).sort();
    expect(enabled).toEqual(
      made
        .filter((e) => e.status === 'ENABLED')
        .map((e) => e.id)
        .sort(),
    );
  });

  it('when the same (endpoint, event) delivery is inserted twice, then it is stored once', async () => {
    const e = await storedEndpoint();
    const tenant = e.tenant_id;
    const d = delivery(e);
    await getStore().insertDeliveries([d]);
    await getStore().insertDeliveries([{ ...d, id: newId('whd') }, delivery(e)]);
    const listed = await getStore().listDeliveries(tenant, e.id, { limit: 10 });
    expect(listed).toHaveLength(2);
    expect(listed.filter((x) => x.event_id === d.event_id).map((x) => x.id)).toEqual([d.id]);
    expect(await getStore().getDelivery(tenant, e.id, d.id)).toEqual(d);
    expect(await getStore().getDelivery(newId('tnt'), e.id, d.id)).toBeNull();
  });

  it('when two workers claim at once, then no delivery is leased twice, and a lease that ran out can be claimed again', async () => {
    const e = await storedEndpoint();
    const mine = Array.from({ length: 6 }, () => delivery(e));
    await getStore().insertDeliveries(mine);
    const ids = new Set(mine.map((d) => d.id));
    const now = at(1_000);
    const [a, b] = await Promise.all([
      getStore().claimDue(now, at(31_000), 1000),
      getStore().claimDue(now, at(31_000), 1000),
    ]);
    const claimed = [...a, ...b].filter((d) => ids.has(d.id)).map((d) => d.id);
    expect(new Set(claimed).size).toBe(claimed.length);
    expect(new Set(claimed)).toEqual(ids);
    // Still leased at 20 s: nothing; at 40 s the leases have run out.
    expect((await getStore().claimDue(at(20_000), at(50_000), 1000)).filter((d) => ids.has(d.id))).toEqual(
      [],
    );
    const again = (await getStore().claimDue(at(40_000), at(70_000), 1000)).filter((d) => ids.has(d.id));
    expect(again.map((d) => d.id).sort()).toEqual([...ids].sort());
    // The first lease's token no longer holds it: its late write is refused.
    const stale = [...a, ...b].find((d) => d.id === again[0]!.id)!;
    const outcome = {
      attempt: attempt(true),
      status: 'SUCCEEDED' as const,
      next_attempt_at: null,
      scheduled: true,
    };
    expect(await getStore().finishAttempt(stale, outcome, at(41_000).toISOString())).toBeNull();
    const done = await getStore().finishAttempt(again[0]!, outcome, at(41_000).toISOString());
    expect(done).toMatchObject({
      status: 'SUCCEEDED',
      attempts: [attempt(true)],
      scheduled_attempts: 1,
      next_attempt_at: null,
    });
  });

  it('when an attempt fails with a retry scheduled, then the delivery is due again only at that time', async () => {
    const e = await storedEndpoint();
    const d = delivery(e);
    await getStore().insertDeliveries([d]);
    const [c] = (await getStore().claimDue(at(0), at(30_000), 1000)).filter((x) => x.id === d.id);
    const next = at(5_000).toISOString();
    const after = await getStore().finishAttempt(
      c!,
      { attempt: attempt(false), status: 'PENDING', next_attempt_at: next, scheduled: true },
      at(10).toISOString(),
    );
    expect(after).toMatchObject({ status: 'PENDING', next_attempt_at: next, scheduled_attempts: 1 });
    expect((await getStore().claimDue(at(4_000), at(34_000), 1000)).map((x) => x.id)).not.toContain(d.id);
    expect((await getStore().claimDue(at(5_000), at(35_000), 1000)).map((x) => x.id)).toContain(d.id);
    const backlog = await getStore().backlog();
    expect(backlog.pending).toBeGreaterThanOrEqual(1);
    expect(backlog.oldestCreatedAt).not.toBeNull();
  });

  it('when claimOne names a delivery leased by another, then null; else it leases it whatever its status', async () => {
    const e = await storedEndpoint();
    const d = delivery(e, { status: 'FAILED', next_attempt_at: null });
    await getStore().insertDeliveries([d]);
    const first = await getStore().claimOne(d, at(0), at(30_000));
    expect(first).toMatchObject({ id: d.id, status: 'FAILED' });
    expect(await getStore().claimOne(d, at(1_000), at(31_000))).toBeNull();
    expect(await getStore().claimOne({ ...d, tenant_id: newId('tnt') }, at(40_000), at(70_000))).toBeNull();
    expect(await getStore().claimOne(d, at(40_000), at(70_000))).not.toBeNull();
  });

  it('when listing deliveries by status, then only those are listed, newest first', async () => {
    const e = await storedEndpoint();
    const tenant = e.tenant_id;
    const failed = [
      delivery(e, { status: 'FAILED', next_attempt_at: null }),
      delivery(e, { status: 'FAILED', next_attempt_at: null }),
    ];
    await getStore().insertDeliveries([
      ...failed,
      delivery(e, { status: 'SUCCEEDED', next_attempt_at: null }),
    ]);
    const listed = await getStore().listDeliveries(tenant, e.id, { limit: 10, status: 'FAILED' });
    expect(listed.map((d) => d.id)).toEqual(failed.map((d) => d.id).reverse());
  });

  it('when deliveries are listed oldest first and counted, then pages run oldest first, each once, and the count is what paging returns', async () => {
    const e = await storedEndpoint();
    const other = await storedEndpoint();
    const tenant = e.tenant_id;
    const all = Array.from({ length: 7 }, (_, i) =>
      delivery(e, i % 3 === 0 ? { status: 'FAILED', next_attempt_at: null } : {}),
    );
    await getStore().insertDeliveries([...all, delivery(other)]);
    const walk = (q: { order?: 'asc' | 'desc'; status?: 'FAILED' }) =>
      walkPages(2, (page) => getStore().listDeliveries(tenant, e.id, { ...page, ...q }));
    const failed = all.filter((d) => d.status === 'FAILED').map((d) => d.id);
    expect(await walk({ order: 'asc' })).toEqual(all.map((d) => d.id));
    expect(await walk({ order: 'asc', status: 'FAILED' })).toEqual(failed);
    expect(await walk({ order: 'desc' })).toEqual(all.map((d) => d.id).reverse());
    const counts = {
      all: await getStore().countDeliveries(tenant, e.id, {}),
      failed: await getStore().countDeliveries(tenant, e.id, { status: 'FAILED' }),
      otherTenant: await getStore().countDeliveries(newId('tnt'), e.id, {}),
    };
    expect(counts).toEqual({ all: all.length, failed: failed.length, otherTenant: 0 });
  });

  it('when attempts are counted since two instants, then each count holds the attempts at or after it and their 2xx; another endpoint or tenant counts nothing', async () => {
    const e = await storedEndpoint();
    const tried = (ms: number, ok: boolean) => ({ ...attempt(ok), attempted_at: at(ms).toISOString() });
    const hour = 3_600_000;
    await getStore().insertDeliveries([
      delivery(e, {
        status: 'SUCCEEDED',
        attempts: [tried(-30 * hour, false), tried(-2 * hour, true)],
        updated_at: at(-2 * hour).toISOString(),
      }),
      delivery(e, {
        status: 'FAILED',
        attempts: [tried(-8 * 24 * hour, false), tried(-3 * 24 * hour, false), tried(-hour, false)],
        updated_at: at(-hour).toISOString(),
      }),
      // Finished before the week began: none of it counts.
      delivery(e, {
        status: 'SUCCEEDED',
        attempts: [tried(-9 * 24 * hour, true)],
        updated_at: at(-9 * 24 * hour).toISOString(),
      }),
    ]);
    const since = [at(-24 * hour), at(-7 * 24 * hour)];
    expect(await getStore().attemptCounts(e.tenant_id, e.id, since)).toEqual([
      { attempts: 2, succeeded: 1 },
      { attempts: 4, succeeded: 1 },
    ]);
    expect(await getStore().attemptCounts(newId('tnt'), e.id, since)).toEqual([
      { attempts: 0, succeeded: 0 },
      { attempts: 0, succeeded: 0 },
    ]);
    expect(await getStore().attemptCounts(e.tenant_id, newId('whe'), since)).toEqual([
      { attempts: 0, succeeded: 0 },
      { attempts: 0, succeeded: 0 },
    ]);
  });

  it('when failed deliveries since a time are replayed, then they are PENDING and due, once: a second replay, another tenant or a leased one changes nothing', async () => {
    const e = await storedEndpoint();
    const failed = (created: number) =>
      delivery(e, { status: 'FAILED', next_attempt_at: null, created_at: at(created).toISOString() });
    const [old, a, b, leased] = [failed(-60_000), failed(1_000), failed(2_000), failed(3_000)];
    const succeeded = delivery(e, {
      status: 'SUCCEEDED',
      next_attempt_at: null,
      created_at: at(4_000).toISOString(),
    });
    await getStore().insertDeliveries([old!, a!, b!, leased!, succeeded]);
    const ids = await getStore().failedSince(e.tenant_id, e.id, at(0), 10);
    expect(ids).toEqual([a!.id, b!.id, leased!.id]);
    expect(await getStore().failedSince(e.tenant_id, e.id, at(0), 2)).toEqual([a!.id, b!.id]);
    expect(await getStore().failedSince(newId('tnt'), e.id, at(0), 10)).toEqual([]);
    const now = at(10_000);
    expect(await getStore().claimOne(leased!, now, at(40_000))).not.toBeNull();
    expect(await getStore().requeueFailed(newId('tnt'), e.id, ids, now)).toBe(0);
    expect(await getStore().requeueFailed(e.tenant_id, e.id, ids, now)).toBe(2);
    // Later, as a repeated call would be: the two are PENDING now, not FAILED.
    expect(await getStore().requeueFailed(e.tenant_id, e.id, ids, at(11_000))).toBe(0);
    expect(await getStore().getDelivery(e.tenant_id, e.id, a!.id)).toMatchObject({
      status: 'PENDING',
      next_attempt_at: now.toISOString(),
      scheduled_attempts: 0,
    });
    expect(await getStore().getDelivery(e.tenant_id, e.id, leased!.id)).toMatchObject({ status: 'FAILED' });
    const due = (await getStore().claimDue(now, at(40_000), 1000)).map((d) => d.id);
    expect(due).toEqual(expect.arrayContaining([a!.id, b!.id]));
    expect(due).not.toContain(leased!.id);
  });
});

// A store of its own: subscribedTypes spans every tenant, so the suite above's endpoints would count.
describeStoreContract<WebhookStore>('WebhookStore.subscribedTypes', adapters, (getStore) => {
  it('when endpoints of several tenants subscribe, then subscribedTypes names each type once, sorted, a disabled endpoint’s included, a deleted one’s not, and "*" once one takes every type', async () => {
    expect(await getStore().subscribedTypes()).toEqual([]);
    const orders = endpoint(newId('tnt'), { event_types: ['MANDATE_REVOKED', 'MANDATE_CREATED'] });
    const paused = endpoint(newId('tnt'), {
      event_types: ['MANDATE_CREATED'],
      status: 'DISABLED',
      disabled_reason: 'manual',
    });
    const gone = endpoint(newId('tnt'), { event_types: ['API_CALL'] });
    for (const e of [orders, paused, gone]) expect(await getStore().insertEndpoint(e, [])).toBe(true);
    expect(await getStore().deleteEndpoint(gone, [])).toBe(true);
    expect(await getStore().subscribedTypes()).toEqual(['MANDATE_CREATED', 'MANDATE_REVOKED']);
    await getStore().insertEndpoint(endpoint(newId('tnt'), { event_types: ['*'] }), []);
    expect(await getStore().subscribedTypes()).toEqual(['*', 'MANDATE_CREATED', 'MANDATE_REVOKED']);
  });
});
