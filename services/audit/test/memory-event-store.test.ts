import { newId } from '@mandate/shared/core';
import { type AuditEvent } from '@mandate/shared/events';
import { MemoryEventStore } from '../src/store/memory-event-store';
import { buildAuditEvent } from './factories';

/**
 * The memory store's cost bound, asserted structurally: `scanned` counts the stored events a list
 * looked at, so a page with an indexed filter must touch at most limit+1 of them however many
 * events the tenant and the others hold.
 */
describe('MemoryEventStore list cost', () => {
  const store = new MemoryEventStore();
  const tenant = newId('tnt');
  const other = newId('tnt');
  const key = newId('key');
  const mandate = newId('mdt');
  const rare = (i: number) => i % 100 === 0;
  const minute = (i: number) => new Date(Date.UTC(2026, 0, 1) + i * 60_000);
  // Built here, not in beforeAll: the cases below name cursors among them.
  const events: AuditEvent[] = Array.from({ length: 2_000 }, (_, i) =>
    buildAuditEvent(tenant, {
      occurredAt: minute(i),
      type: rare(i) ? 'MANDATE_REVOKED' : 'API_CALL',
      keyId: rare(i) ? key : undefined,
      resource: rare(i) ? { type: 'mandate', id: mandate } : null,
      // The many calls are the dashboard's own reads, as a log's calls mostly are while people look.
      ...(rare(i) ? {} : { data: { method: 'GET', route: '/v1/events', via: 'dashboard' } }),
    }),
  );

  beforeAll(async () => {
    // The other tenant's events share the values of every filter, and are newer.
    for (let i = 0; i < 2_000; i++)
      await store.insert(
        buildAuditEvent(other, {
          type: 'MANDATE_REVOKED',
          keyId: key,
          resource: { type: 'mandate', id: mandate },
        }),
      );
    // Oldest last: every insert lands below the ones before it.
    await store.insertMany([...events].reverse());
  });

  it.each([
    ['no filter', {}],
    ['a cursor deep in the list', { afterId: events[1_000]!.id }],
    ['a rare type', { types: ['MANDATE_REVOKED' as const] }],
    ['two types', { types: ['MANDATE_REVOKED' as const, 'MANDATE_CREATED' as const] }],
    ['a resource_id', { resource_id: mandate }],
    ['a key_id behind a cursor', { key_id: key, afterId: events[1_500]!.id }],
    ['a rare type and a key_id', { types: ['MANDATE_REVOKED' as const], key_id: key }],
    ["the dashboard's own reads left out", { exclude_dashboard_reads: true }],
    [
      "the dashboard's own reads left out behind a cursor",
      { exclude_dashboard_reads: true, afterId: events[1_500]!.id },
    ],
  ])('when listing with %s, then at most limit+1 stored events are looked at', async (_, q) => {
    const page = await store.list(tenant, { limit: 5, ...q });
    expect(page.length).toBeGreaterThan(0);
    expect(store.scanned).toBeLessThanOrEqual(6);
  });

  it('when listing one resource oldest first, then at most limit+1 stored events are looked at', async () => {
    expect(await store.listByResource(tenant, mandate, 3)).toHaveLength(4);
    expect(store.scanned).toBeLessThanOrEqual(4);
  });

  it('when since/until select a few events far below the top, then only those are looked at', async () => {
    const page = await store.list(tenant, {
      limit: 5,
      since: minute(100).toISOString(),
      until: minute(110).toISOString(),
    });
    expect(page.map((e) => e.id)).toEqual(
      events
        .slice(100, 110)
        .map((e) => e.id)
        .reverse()
        .slice(0, 6),
    );
    expect(store.scanned).toBeLessThanOrEqual(10);
  });

  it('when since/until select most events, then the walk from the cursor stops at limit+1', async () => {
    const page = await store.list(tenant, {
      limit: 5,
      since: minute(0).toISOString(),
      afterId: events[1_900]!.id,
    });
    expect(page.map((e) => e.id)).toEqual(
      events
        .slice(1_894, 1_900)
        .map((e) => e.id)
        .reverse(),
    );
    expect(store.scanned).toBeLessThanOrEqual(6);
  });

  it('when a filter combination has no index of its own, then only the own tenant’s events below the cursor are looked at', async () => {
    const page = await store.list(tenant, {
      limit: 5,
      types: ['API_CALL'],
      key_id: key,
      afterId: events[1_000]!.id,
    });
    expect(page).toEqual([]);
    // The key's index is the narrower one: its 20 events, 10 of them below the cursor.
    expect(store.scanned).toBe(10);
  });
});
