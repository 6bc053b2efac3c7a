import { newId } from '@mandate/shared/core';
import { type AuditEvent } from '@mandate/shared/events';
import { describeStoreContract, walkPages } from '@mandate/shared/testing';
import type { EventStore } from '../src/store/event-store';
import { eventStoreAdapters } from './adapters';
import { buildAuditEvent } from './factories';

const ids = (events: AuditEvent[]) => events.map((e) => e.id);
const newestFirst = (events: AuditEvent[]) => [...events].sort((a, b) => (a.id < b.id ? 1 : -1));

describeStoreContract<EventStore>('EventStore', eventStoreAdapters(), (getStore) => {
  it('when an event is inserted, then get returns it as a plain object equal to what was inserted', async () => {
    const tenant = newId('tnt');
    const event = buildAuditEvent(tenant, { data: { nested: { a: 1 }, list: [1, 'x'] } });
    await getStore().insert(event);
    const got = await getStore().get(tenant, event.id);
    // With its place in the tenant's log (docs/API.md#proving-the-log).
    expect(got).toEqual({ ...event, seq: 1 });
    expect(got).not.toHaveProperty('_id');
    expect(got).not.toHaveProperty('__v');
  });

  it('when an event has empty data, no resource and no request id, then those come back as {} and null', async () => {
    const tenant = newId('tnt');
    const event = {
      ...buildAuditEvent(tenant, { resource: null, data: {} }),
      request_id: null,
      actor: { type: 'system' as const },
    };
    await getStore().insert(event);
    expect(await getStore().get(tenant, event.id)).toEqual({ ...event, seq: 1 });
  });

  it('when the same event id is inserted twice, then it is stored once and the second insert is no error', async () => {
    const tenant = newId('tnt');
    const event = buildAuditEvent(tenant);
    await getStore().insert(event);
    await expect(getStore().insert({ ...event, data: { redelivered: true } })).resolves.toBeUndefined();
    const listed = await getStore().list(tenant, { limit: 10 });
    expect(ids(listed)).toEqual([event.id]);
    // The first write wins: a redelivery never rewrites history.
    expect(listed[0]).toEqual({ ...event, seq: 1 });
  });

  it('when the same id is inserted concurrently, then it is stored once', async () => {
    const tenant = newId('tnt');
    const event = buildAuditEvent(tenant);
    await Promise.all(Array.from({ length: 5 }, () => getStore().insert(event)));
    expect(ids(await getStore().list(tenant, { limit: 10 }))).toEqual([event.id]);
  });

  it('when insertMany gets duplicates within the batch and already stored ids, then each id is stored once', async () => {
    const tenant = newId('tnt');
    const [a, b, c] = [buildAuditEvent(tenant), buildAuditEvent(tenant), buildAuditEvent(tenant)] as [
      AuditEvent,
      AuditEvent,
      AuditEvent,
    ];
    await getStore().insert(a);
    await expect(getStore().insertMany([a, b, b, c, a])).resolves.toBeUndefined();
    expect(ids(await getStore().list(tenant, { limit: 10 }))).toEqual([c.id, b.id, a.id]);
    await expect(getStore().insertMany([])).resolves.toBeUndefined();
  });

  it('when another tenant reads, then get is null and list excludes the events', async () => {
    const tenantA = newId('tnt');
    const tenantB = newId('tnt');
    const event = buildAuditEvent(tenantA);
    const own = buildAuditEvent(tenantB);
    await getStore().insertMany([event, own]);
    expect(await getStore().get(tenantB, event.id)).toBeNull();
    expect(ids(await getStore().list(tenantB, { limit: 100 }))).toEqual([own.id]);
  });

  it('when an event has no tenant (a platform event), then no tenant read returns it', async () => {
    const tenant = newId('tnt');
    const platform = buildAuditEvent(null, {
      type: 'ONBOARDING_REQUESTED',
      resource: { type: 'onboarding', id: newId('onb') },
    });
    await getStore().insert(platform);
    expect(await getStore().get(tenant, platform.id)).toBeNull();
    expect(await getStore().get('null', platform.id)).toBeNull();
    expect(await getStore().get('', platform.id)).toBeNull();
    expect(await getStore().list(tenant, { limit: 100 })).toEqual([]);
    expect(await getStore().list('', { limit: 100 })).toEqual([]);
  });

  it('when listing, then events come newest first by id, up to limit+1', async () => {
    const tenant = newId('tnt');
    const events = Array.from({ length: 5 }, () => buildAuditEvent(tenant));
    // Inserted out of order, as redeliveries arrive: the order comes from the ids.
    await getStore().insertMany([events[3]!, events[0]!, events[4]!, events[1]!, events[2]!]);
    expect(ids(await getStore().list(tenant, { limit: 2 }))).toEqual(ids(newestFirst(events)).slice(0, 3));
    expect(ids(await getStore().list(tenant, { limit: 10 }))).toEqual(ids(newestFirst(events)));
  });

  it('when afterId is given, then only older events follow', async () => {
    const tenant = newId('tnt');
    const events = Array.from({ length: 4 }, () => buildAuditEvent(tenant));
    await getStore().insertMany(events);
    expect(ids(await getStore().list(tenant, { limit: 10, afterId: events[2]!.id }))).toEqual([
      events[1]!.id,
      events[0]!.id,
    ]);
  });

  it('when filtering by types, then only those types are listed', async () => {
    const tenant = newId('tnt');
    const created = buildAuditEvent(tenant, { type: 'MANDATE_CREATED' });
    const revoked = buildAuditEvent(tenant, { type: 'MANDATE_REVOKED' });
    const call = buildAuditEvent(tenant, { type: 'API_CALL' });
    await getStore().insertMany([created, revoked, call]);
    expect(ids(await getStore().list(tenant, { limit: 10, types: ['MANDATE_REVOKED'] }))).toEqual([
      revoked.id,
    ]);
    expect(ids(await getStore().list(tenant, { limit: 10, types: ['MANDATE_CREATED', 'API_CALL'] }))).toEqual(
      [call.id, created.id],
    );
    expect(ids(await getStore().list(tenant, { limit: 10, types: [] }))).toHaveLength(3);
  });

  it('when filtering by resource_id, then only events about that resource are listed', async () => {
    const tenant = newId('tnt');
    const mandate = newId('mdt');
    const a = buildAuditEvent(tenant, { resource: { type: 'mandate', id: mandate } });
    const b = buildAuditEvent(tenant, {
      type: 'MANDATE_REVOKED',
      resource: { type: 'mandate', id: mandate },
    });
    const other = buildAuditEvent(tenant);
    const none = buildAuditEvent(tenant, { resource: null });
    await getStore().insertMany([a, b, other, none]);
    expect(ids(await getStore().list(tenant, { limit: 10, resource_id: mandate }))).toEqual([b.id, a.id]);
  });

  it('when filtering by key_id, then only events whose actor used that key are listed', async () => {
    const tenant = newId('tnt');
    const keyA = newId('key');
    const byA = buildAuditEvent(tenant, { keyId: keyA });
    const byOther = buildAuditEvent(tenant, { keyId: newId('key') });
    const system = buildAuditEvent(tenant, { caller: undefined });
    await getStore().insertMany([byA, byOther, system]);
    expect(ids(await getStore().list(tenant, { limit: 10, key_id: keyA }))).toEqual([byA.id]);
  });

  it('when filtering by since and until, then since is inclusive and until exclusive on occurred_at', async () => {
    const tenant = newId('tnt');
    const at = (iso: string) => buildAuditEvent(tenant, { occurredAt: new Date(iso) });
    const e1 = at('2026-01-01T00:00:00.000Z');
    const e2 = at('2026-01-02T00:00:00.000Z');
    const e3 = at('2026-01-03T00:00:00.000Z');
    await getStore().insertMany([e1, e2, e3]);
    const list = (q: { since?: string; until?: string }) =>
      getStore()
        .list(tenant, { limit: 10, ...q })
        .then(ids);
    expect(await list({ since: '2026-01-02T00:00:00.000Z' })).toEqual([e3.id, e2.id]);
    expect(await list({ until: '2026-01-02T00:00:00.000Z' })).toEqual([e1.id]);
    expect(await list({ since: '2026-01-01T00:00:00.000Z', until: '2026-01-03T00:00:00.000Z' })).toEqual([
      e2.id,
      e1.id,
    ]);
    // Same instant written with an offset.
    expect(await list({ since: '2026-01-02T01:00:00+01:00', until: '2026-01-02T00:00:00.001Z' })).toEqual([
      e2.id,
    ]);
  });

  it('when filters are combined, then an event must match all of them', async () => {
    const tenant = newId('tnt');
    const key = newId('key');
    const mandate = newId('mdt');
    const match = buildAuditEvent(tenant, {
      type: 'MANDATE_SUSPENDED',
      keyId: key,
      resource: { type: 'mandate', id: mandate },
    });
    const wrongType = buildAuditEvent(tenant, { keyId: key, resource: { type: 'mandate', id: mandate } });
    const wrongKey = buildAuditEvent(tenant, {
      type: 'MANDATE_SUSPENDED',
      resource: { type: 'mandate', id: mandate },
    });
    await getStore().insertMany([match, wrongType, wrongKey]);
    const got = await getStore().list(tenant, {
      limit: 10,
      types: ['MANDATE_SUSPENDED'],
      key_id: key,
      resource_id: mandate,
      since: '2000-01-01T00:00:00.000Z',
    });
    expect(ids(got)).toEqual([match.id]);
  });

  it('when paging through while new events are inserted, then no event is skipped or repeated', async () => {
    const tenant = newId('tnt');
    const existing = Array.from({ length: 25 }, () => buildAuditEvent(tenant));
    await getStore().insertMany(existing);
    const seen = await walkPages(4, async (page) => {
      const read = await getStore().list(tenant, page);
      // Meanwhile, producers keep writing (newer ids).
      await getStore().insertMany([buildAuditEvent(tenant), buildAuditEvent(tenant)]);
      return read;
    });
    expect(seen).toEqual(ids(newestFirst(existing)));
  });

  it('when ids arrive out of order, then paging with a type filter returns each matching event once, newest first', async () => {
    const tenant = newId('tnt');
    const types = ['API_CALL', 'MANDATE_CREATED', 'MANDATE_REVOKED'] as const;
    const events = Array.from({ length: 30 }, (_, i) => buildAuditEvent(tenant, { type: types[i % 3]! }));
    // Several producers: late ids land between ones already stored.
    const shuffled = [...events].sort((a, b) => (a.id.slice(-3) < b.id.slice(-3) ? -1 : 1));
    await getStore().insertMany(shuffled.slice(0, 15));
    await getStore().insertMany(shuffled.slice(15));
    const wanted = events.filter((e) => e.type !== 'API_CALL');
    const seen = await walkPages(3, (page) =>
      getStore().list(tenant, { ...page, types: ['MANDATE_REVOKED', 'MANDATE_CREATED'] }),
    );
    expect(seen).toEqual(ids(newestFirst(wanted)));
  });

  it('when filters are combined with a cursor, then the page holds only older events matching every filter', async () => {
    const tenant = newId('tnt');
    const key = newId('key');
    const mandate = newId('mdt');
    const about = { type: 'mandate', id: mandate };
    const e = [
      buildAuditEvent(tenant, { type: 'MANDATE_CREATED', keyId: key, resource: about }),
      buildAuditEvent(tenant, { type: 'VERIFICATION_PERFORMED', keyId: key, resource: about }),
      buildAuditEvent(tenant, { type: 'MANDATE_SUSPENDED', keyId: key, resource: about }),
      buildAuditEvent(tenant, { type: 'VERIFICATION_PERFORMED', resource: about }),
      buildAuditEvent(tenant, { type: 'VERIFICATION_PERFORMED', keyId: key, resource: about }),
      buildAuditEvent(tenant, { type: 'VERIFICATION_PERFORMED', keyId: key }),
    ];
    await getStore().insertMany(e);
    const page = (afterId?: string) =>
      getStore()
        .list(tenant, {
          limit: 1,
          afterId,
          types: ['VERIFICATION_PERFORMED'],
          key_id: key,
          resource_id: mandate,
        })
        .then(ids);
    expect(await page()).toEqual([e[4]!.id, e[1]!.id]);
    expect(await page(e[4]!.id)).toEqual([e[1]!.id]);
    expect(await page(e[1]!.id)).toEqual([]);
  });

  it('when a filter value has no events, then the list is empty, as is a cursor below every event', async () => {
    const tenant = newId('tnt');
    const event = buildAuditEvent(tenant, { type: 'MANDATE_CREATED' });
    await getStore().insert(event);
    expect(await getStore().list(tenant, { limit: 10, types: ['EVIDENCE_EXPORTED'] })).toEqual([]);
    expect(await getStore().list(tenant, { limit: 10, resource_id: newId('mdt') })).toEqual([]);
    expect(await getStore().list(tenant, { limit: 10, key_id: newId('key') })).toEqual([]);
    expect(await getStore().list(tenant, { limit: 10, afterId: event.id })).toEqual([]);
    // A cursor newer than every event (or not an event id at all) pages from the top.
    expect(
      ids(await getStore().list(tenant, { limit: 10, afterId: 'evt_zzzzzzzzzzzzzzzzzzzzzzzzzz' })),
    ).toEqual([event.id]);
  });

  it('when another tenant has events with the same type, resource and key, then a filtered list shows none of them', async () => {
    const tenantA = newId('tnt');
    const tenantB = newId('tnt');
    const key = newId('key');
    const about = { type: 'mandate', id: newId('mdt') };
    const theirs = buildAuditEvent(tenantA, { type: 'MANDATE_REVOKED', keyId: key, resource: about });
    const mine = buildAuditEvent(tenantB, { type: 'MANDATE_REVOKED', keyId: key, resource: about });
    await getStore().insertMany([theirs, mine]);
    for (const q of [{ types: ['MANDATE_REVOKED' as const] }, { resource_id: about.id }, { key_id: key }])
      expect(ids(await getStore().list(tenantB, { limit: 10, ...q }))).toEqual([mine.id]);
  });

  it('when since/until are paged with a cursor, then each event in the window comes once, newest first by id, whatever its occurred_at', async () => {
    const tenant = newId('tnt');
    // occurred_at does not follow the ids (a producer's clock, a backfill): order comes from the ids.
    const hours = [5, 1, 9, 3, 7, 2, 8, 4, 6, 0, 11, 10];
    const events = hours.map((h, i) =>
      buildAuditEvent(tenant, {
        type: i % 2 === 0 ? 'MANDATE_CREATED' : 'API_CALL',
        occurredAt: new Date(Date.UTC(2026, 0, 1, h)),
      }),
    );
    await getStore().insertMany(events);
    // A wide window and a narrow one (a memory store may read the two differently).
    const windows = [
      { since: '2026-01-01T02:00:00.000Z', until: '2026-01-01T09:00:00.000Z' },
      { since: '2026-01-01T02:00:00.000Z', until: '2026-01-01T05:00:00.000Z' },
    ];
    for (const window of windows)
      for (const types of [undefined, ['MANDATE_CREATED' as const]]) {
        const seen = await walkPages(2, (page) => getStore().list(tenant, { ...page, types, ...window }));
        const wanted = events.filter(
          (e) =>
            e.occurred_at >= window.since &&
            e.occurred_at < window.until &&
            (!types || types.includes(e.type as 'MANDATE_CREATED')),
        );
        expect(seen).toEqual(ids(newestFirst(wanted)));
      }
  });

  it('when order is asc, then pages come oldest first by id, each event once, for every filter and time window', async () => {
    const tenant = newId('tnt');
    const hours = [5, 1, 9, 3, 7, 2, 8, 4, 6, 0, 11, 10];
    const events = hours.map((h, i) =>
      buildAuditEvent(tenant, {
        type: i % 2 === 0 ? 'MANDATE_CREATED' : 'API_CALL',
        occurredAt: new Date(Date.UTC(2026, 0, 1, h)),
      }),
    );
    await getStore().insertMany(events);
    const queries = [
      {},
      { types: ['MANDATE_CREATED' as const] },
      // A wide window and a narrow one (a memory store may read the two differently).
      { since: '2026-01-01T02:00:00.000Z', until: '2026-01-01T09:00:00.000Z' },
      { since: '2026-01-01T02:00:00.000Z', until: '2026-01-01T04:00:00.000Z', types: ['API_CALL' as const] },
    ];
    for (const q of queries) {
      const asc = await walkPages(2, (page) => getStore().list(tenant, { ...page, ...q, order: 'asc' }));
      const desc = await walkPages(2, (page) => getStore().list(tenant, { ...page, ...q, order: 'desc' }));
      const wanted = events.filter(
        (e) =>
          (!q.types || q.types.includes(e.type as never)) &&
          (!q.since || e.occurred_at >= q.since) &&
          (!q.until || e.occurred_at < q.until),
      );
      expect({ q, asc, desc }).toEqual({
        q,
        asc: ids(newestFirst(wanted)).reverse(),
        desc: ids(newestFirst(wanted)),
      });
    }
  });

  it('when counting, then the count equals what paging through returns for every filter, in this tenant only', async () => {
    const tenant = newId('tnt');
    const key = 'key_01jcountkey00000000000000000';
    const events = Array.from({ length: 14 }, (_, i) =>
      buildAuditEvent(tenant, {
        type: i % 3 === 0 ? 'API_CALL' : 'MANDATE_CREATED',
        ...(i % 2 === 0 ? { keyId: key } : {}),
        occurredAt: new Date(Date.UTC(2026, 0, 1, (i * 5) % 14)),
        ...(i % 3 === 0
          ? {
              resource: null,
              data: {
                method: i % 2 === 0 ? 'GET' : 'POST',
                route: '/v1/mandates',
                path: '/v1/mandates',
                status: 200,
                via: 'dashboard',
              },
            }
          : {}),
      }),
    );
    await getStore().insertMany(events);
    await getStore().insertMany([buildAuditEvent(newId('tnt'), { keyId: key })]);
    const queries = [
      {},
      { types: ['API_CALL' as const] },
      { key_id: key },
      { resource_id: events[1]!.resource!.id },
      { exclude_dashboard_reads: true },
      { since: '2026-01-01T02:00:00.000Z', until: '2026-01-01T09:00:00.000Z' },
      { since: '2026-01-01T03:00:00.000Z', until: '2026-01-01T05:00:00.000Z', key_id: key },
      { types: ['MANDATE_REVOKED' as const] },
    ];
    const counted = [];
    const paged = [];
    for (const q of queries) {
      counted.push({ q, n: await getStore().count(tenant, q) });
      paged.push({ q, n: (await walkPages(3, (page) => getStore().list(tenant, { ...page, ...q }))).length });
    }
    expect(counted).toEqual(paged);
    expect(counted.map((c) => c.n)).toEqual([14, 5, 7, 1, 11, 7, 1, 0]);
  });

  describe('exclude_dashboard_reads (docs/API.md#events)', () => {
    /** An API_CALL as the gateway records it; `via` left out: one recorded before the field existed. */
    const call = (tenant: string, method: string, via?: 'api' | 'dashboard', occurredAt?: Date) =>
      buildAuditEvent(tenant, {
        type: 'API_CALL',
        resource: null,
        ...(occurredAt ? { occurredAt } : {}),
        data: { method, route: '/v1/mandates', path: '/v1/mandates', status: 200, ...(via ? { via } : {}) },
      });

    it("when asked, then the dashboard's own GET and HEAD calls are left out; its writes, other calls, other events and calls stored without via stay", async () => {
      const tenant = newId('tnt');
      const dashboardGet = call(tenant, 'GET', 'dashboard');
      const dashboardHead = call(tenant, 'HEAD', 'dashboard');
      const dashboardPost = call(tenant, 'POST', 'dashboard');
      const apiGet = call(tenant, 'GET', 'api');
      const before = call(tenant, 'GET');
      const created = buildAuditEvent(tenant, {
        type: 'MANDATE_CREATED',
        data: { via: 'dashboard', method: 'GET' },
      });
      const all = [dashboardGet, dashboardHead, dashboardPost, apiGet, before, created];
      await getStore().insertMany(all);
      const kept = [dashboardPost, apiGet, before, created];
      expect(ids(await getStore().list(tenant, { limit: 10, exclude_dashboard_reads: true }))).toEqual(
        ids(newestFirst(kept)),
      );
      // Not asked (or false): every event, as before.
      expect(ids(await getStore().list(tenant, { limit: 10 }))).toEqual(ids(newestFirst(all)));
      expect(ids(await getStore().list(tenant, { limit: 10, exclude_dashboard_reads: false }))).toEqual(
        ids(newestFirst(all)),
      );
      // With a filter narrower than the exclusion itself (one key's two calls): still left out.
      const key = 'key_01jnarrowkey0000000000000000';
      const [keyRead, keyWrite] = [call(tenant, 'GET', 'dashboard'), call(tenant, 'PUT', 'dashboard')].map(
        (e) => ({ ...e, actor: { type: 'user' as const, key_id: key } }),
      );
      await getStore().insertMany([keyRead!, keyWrite!]);
      expect(
        ids(await getStore().list(tenant, { limit: 10, key_id: key, exclude_dashboard_reads: true })),
      ).toEqual([keyWrite!.id]);
      // Served as stored: the store's own bookkeeping never shows in an event.
      expect(await getStore().get(tenant, dashboardGet.id)).toEqual({ ...dashboardGet, seq: 1 });
    });

    it('when combined with the other filters and paged with a cursor, then each kept event comes once, newest first', async () => {
      const tenant = newId('tnt');
      const key = 'key_01jdashboardreadskey000000';
      const events = Array.from({ length: 12 }, (_, i) =>
        i % 3 === 2
          ? buildAuditEvent(tenant, { keyId: key, occurredAt: new Date(Date.UTC(2026, 0, 1, i)) })
          : {
              ...call(tenant, i % 4 === 0 ? 'POST' : 'GET', 'dashboard', new Date(Date.UTC(2026, 0, 1, i))),
              ...(i % 2 === 0 ? { actor: { type: 'api_key' as const, key_id: key } } : {}),
            },
      );
      await getStore().insertMany(events);
      const window = { since: '2026-01-01T01:00:00.000Z', until: '2026-01-01T10:00:00.000Z' };
      const queries = [
        {},
        { types: ['API_CALL' as const] },
        { key_id: key },
        window,
        { ...window, key_id: key },
      ];
      for (const q of queries) {
        const seen = await walkPages(2, (page) =>
          getStore().list(tenant, { ...page, ...q, exclude_dashboard_reads: true }),
        );
        const everything = await walkPages(100, (page) => getStore().list(tenant, { ...page, ...q }));
        const wanted = everything.filter((id) => {
          const e = events.find((x) => x.id === id)!;
          return !(e.type === 'API_CALL' && e.data.method === 'GET');
        });
        expect({ q, seen }).toEqual({ q, seen: wanted });
        expect(wanted.length).toBeLessThan(everything.length);
      }
    });

    it("when another tenant holds the same calls, then excluding the dashboard's reads shows none of its events", async () => {
      const mine = newId('tnt');
      const theirs = newId('tnt');
      const own = call(mine, 'POST', 'dashboard');
      await getStore().insertMany([call(theirs, 'POST', 'dashboard'), call(theirs, 'GET', 'api'), own]);
      expect(ids(await getStore().list(mine, { limit: 10, exclude_dashboard_reads: true }))).toEqual([
        own.id,
      ]);
    });
  });
});
