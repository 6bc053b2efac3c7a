import fc from 'fast-check';
import { auditLeafBytes } from '@mandate/shared/browser';
import { newId } from '@mandate/shared/core';
import { type AuditEvent } from '@mandate/shared/events';
import { merkleHasher } from '@mandate/shared/mandate';
import { MemoryEventStore } from '../src/store/memory-event-store';
import { buildAuditEvent } from './factories';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/**
 * The memory store keeps its copy of an event with sorted members and hashes JSON.stringify of it
 * as the leaf (docs/PERFORMANCE.md, "Tamper-evident log benchmark (issue 42)"): that shortcut must
 * give the checker's leaf, SHA-256(0x00 || RFC 8785 JSON of the event with its seq), whatever the
 * data holds.
 */
describe('the memory store: leaves from its sorted copies', () => {
  // Keys that sort differently by code unit, by number and by insertion, and values JSON has.
  const key = fc.oneof(
    fc.string(),
    fc.constantFrom('a', 'B', 'é', '_', '10', '9', '1st', '__proto__', 'toJSON'),
  );
  const data = fc.dictionary(key, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 8 });

  it('when events with arbitrary data are stored, then each leaf is the checker’s leaf of the event with its seq', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(data, { minLength: 1, maxLength: 6 }), async (datas) => {
        const store = new MemoryEventStore();
        const tenant = newId('tnt');
        const events = datas.map((d) => buildAuditEvent(tenant, { data: d }));
        for (const event of events) await store.insert(event);
        const leaves = await store.logHashes(
          tenant,
          events.map((_, i) => [i, i + 1] as const),
        );
        events.forEach((event, i) => {
          const expected = merkleHasher.leafHash(auditLeafBytes({ ...event, seq: i + 1 }));
          expect(hex(leaves[i]!)).toBe(hex(expected));
        });
      }),
      { numRuns: 150 },
    );
  });

  it('when a batch mixes tenants, redeliveries and events of every form, then each tenant’s leaves are the checker’s, in seq order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(data, fc.nat(2), fc.boolean(), fc.boolean()), { minLength: 1, maxLength: 30 }),
        async (specs) => {
          const store = new MemoryEventStore();
          const tenants = [newId('tnt'), newId('tnt'), newId('tnt')];
          const batch: AuditEvent[] = [];
          for (const [d, t, indexKeys, again] of specs) {
            const event = buildAuditEvent(tenants[t]!, { data: d });
            // Array-index members take the store's other path (not a plain sorted copy).
            batch.push(indexKeys ? ({ ...event, 10: 'a', 9: 'b' } as AuditEvent) : event);
            if (again) batch.push(structuredClone(batch[batch.length - 1]!));
          }
          await store.insertMany(batch);
          for (const tenant of tenants) {
            const firsts = [
              ...new Map(batch.filter((e) => e.tenant_id === tenant).map((e) => [e.id, e])).values(),
            ];
            expect(await store.logSize(tenant)).toBe(firsts.length);
            const leaves = await store.logHashes(
              tenant,
              firsts.map((_, i) => [i, i + 1] as const),
            );
            for (const [i, event] of firsts.entries()) {
              expect((await store.get(tenant, event.id))?.seq).toBe(i + 1);
              const expected = merkleHasher.leafHash(auditLeafBytes({ ...event, seq: i + 1 }));
              expect(hex(leaves[i]!)).toBe(hex(expected));
            }
          }
        },
      ),
      { numRuns: 100 },
    );
  });

  it.each([
    ['cannot be copied (a function)', { f: () => 1 }],
    ['has no canonical JSON (NaN)', { n: NaN }],
  ])(
    'when an event in a batch %s, then the events stored before it have their leaves and it and the rest are not stored',
    async (_, data) => {
      const store = new MemoryEventStore();
      const tenant = newId('tnt');
      const first = buildAuditEvent(tenant, { data: { a: 1 } });
      const broken = { ...buildAuditEvent(tenant), data } as unknown as AuditEvent;
      const after = buildAuditEvent(tenant, { data: { b: 2 } });
      await expect(store.insertMany([first, broken, after])).rejects.toThrow();
      expect(await store.get(tenant, broken.id)).toBeNull();
      expect(await store.logSize(tenant)).toBe(1);
      const [leaf] = await store.logHashes(tenant, [[0, 1]]);
      expect(hex(leaf!)).toBe(hex(merkleHasher.leafHash(auditLeafBytes({ ...first, seq: 1 }))));
      expect(await store.get(tenant, after.id)).toBeNull();
      // The batch's leaves are in: the next event takes the next seq.
      await store.insert(after);
      expect((await store.get(tenant, after.id))?.seq).toBe(2);
    },
  );

  it('when a delivered event carries a seq of its own, then the store’s seq is the one hashed and read', async () => {
    const store = new MemoryEventStore();
    const tenant = newId('tnt');
    const event: AuditEvent = {
      ...buildAuditEvent(tenant, { data: { b: 1, a: [2, { d: 3, c: 4 }] } }),
      seq: 99,
    };
    await store.insert(event);
    const [leaf] = await store.logHashes(tenant, [[0, 1]]);
    expect(hex(leaf!)).toBe(hex(merkleHasher.leafHash(auditLeafBytes({ ...event, seq: 1 }))));
    expect((await store.get(tenant, event.id))?.seq).toBe(1);
  });

  it('when an event itself holds array-index members, then its leaf is still the checker’s', async () => {
    const store = new MemoryEventStore();
    const tenant = newId('tnt');
    // Object.keys lists '9' before '10'; canonical JSON sorts '10' first.
    const event = { ...buildAuditEvent(tenant), 10: 'a', 9: 'b' } as AuditEvent;
    await store.insert(event);
    const [leaf] = await store.logHashes(tenant, [[0, 1]]);
    expect(hex(leaf!)).toBe(hex(merkleHasher.leafHash(auditLeafBytes({ ...event, seq: 1 }))));
  });

  it('when an event is read, then its members come in the order events are written everywhere else', async () => {
    const store = new MemoryEventStore();
    const tenant = newId('tnt');
    const event = buildAuditEvent(tenant, {
      resource: { type: 'mandate', id: newId('mdt') },
      data: { x: 1 },
    });
    await store.insert(event);
    // The producer's own order (buildEvent's), then the store's seq.
    const order = [...Object.keys(event), 'seq'];
    expect(Object.keys((await store.get(tenant, event.id))!)).toEqual(order);
    const [listed] = await store.list(tenant, { limit: 10 });
    expect(Object.keys(listed!)).toEqual(order);
  });
});
