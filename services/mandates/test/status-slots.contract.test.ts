import { newId } from '@mandate/shared/core';
import { memoryAdapter, mongoAdapter } from '@mandate/shared/testing';
import type { MandateStore } from '../src/store/mandate-store';
import { MemoryMandateStore } from '../src/store/memory-mandate-store';
import { MongoMandateStore } from '../src/store/mongo-mandate-store';
import { buildMandate } from './support';

/** Lists of five entries, so closing a list and opening the next is cheap to reach. */
const CAPACITY = 5;
const adapters = [
  memoryAdapter<MandateStore>(() => new MemoryMandateStore({ statusListCapacity: CAPACITY })),
  mongoAdapter<MandateStore>('mandates-slots', (connection) =>
    MongoMandateStore.create(connection, { statusListCapacity: CAPACITY }),
  ),
];

describe.each(adapters)('status-list slots (store contract, $name)', (adapter) => {
  let store: MandateStore;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ store, close } = await adapter.create());
  });
  afterAll(async () => {
    await close();
  });

  it('when slots are allocated concurrently, then none is handed out twice and a full list closes into the next', async () => {
    const slots = await Promise.all(Array.from({ length: 23 }, () => store.allocateStatusSlot()));
    const keys = slots.map((s) => `${s.list_id}#${s.idx}`);
    expect(new Set(keys).size).toBe(slots.length);
    for (const s of slots) expect(s.idx).toBeLessThan(CAPACITY);
    const lists = new Set(slots.map((s) => s.list_id));
    expect(lists.size).toBe(Math.ceil(slots.length / CAPACITY));
    for (const id of lists) {
      expect(await store.getStatusList(id)).toMatchObject({ list_id: id, capacity: CAPACITY });
    }
  });

  it('when a slot was taken and its mandate never stored (a creation that failed), then no later allocation hands it out again: slots are never reused', async () => {
    const unused = await store.allocateStatusSlot();
    const later = await Promise.all(Array.from({ length: 3 * CAPACITY }, () => store.allocateStatusSlot()));
    expect(later.filter((s) => s.list_id === unused.list_id && s.idx === unused.idx)).toEqual([]);
    // Handed out in order: a full list is never opened again.
    const seqOf = (listId: string) => Number(listId.replace(/^sl_/, ''));
    for (const s of later) expect(seqOf(s.list_id)).toBeGreaterThanOrEqual(seqOf(unused.list_id));
  });

  it('when a slot is somehow stored twice, then the store refuses the second mandate (unique index)', async () => {
    const slot = await store.allocateStatusSlot();
    const tenantId = newId('tnt');
    await store.create(tenantId, buildMandate({ tenant_id: tenantId }), [], slot);
    await expect(
      store.create(tenantId, buildMandate({ tenant_id: tenantId }), [], slot),
    ).rejects.toMatchObject({
      status: 409,
    });
    expect(await store.statusEntries(slot.list_id)).toEqual([
      { idx: slot.idx, state: 'ACTIVE', expires_at: null },
    ]);
  });

  it('when a list is published with a stale ETag, then the write is refused', async () => {
    const { list_id } = await store.allocateStatusSlot();
    const published = { token: 'a.b.c', etag: '"1"', digest: 'd', iat: 1, exp: 2 };
    expect(await store.publishStatusList(list_id, null, published)).toBe(true);
    expect(await store.publishStatusList(list_id, null, { ...published, etag: '"2"' })).toBe(false);
    expect(await store.publishStatusList(list_id, '"1"', { ...published, etag: '"2"' })).toBe(true);
    expect((await store.getStatusList(list_id))?.published?.etag).toBe('"2"');
  });
});
