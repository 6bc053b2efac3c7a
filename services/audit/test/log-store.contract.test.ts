import crypto from 'node:crypto';
import { newId } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { auditLeafHash } from '../src/store/leaf-hash';
import { type AuditEvent } from '@mandate/shared/events';
import { connectMongo } from '@mandate/shared/data';
import {
  MONGO_ADAPTER,
  MONGO_URL,
  describeStoreContract,
  memoryAdapter,
  mongoSkipReason,
  testDatabaseName,
  type AdapterFactory,
} from '@mandate/shared/testing';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AuditStore } from '../src/store/event-store';
import { FileEventStore } from '../src/store/file-event-store';
import { MemoryEventStore } from '../src/store/memory-event-store';
import { MongoEventStore } from '../src/store/mongo-event-store';
import { buildAuditEvent } from './factories';

const logger = createLogger('audit-log-test', 'silent');

/** A store, and a second replica of it: a store over the same data (for Mongo, its own connection). */
interface Replicas {
  store: AuditStore;
  replica: AuditStore;
}

function adapters(): AdapterFactory<Replicas>[] {
  return [
    memoryAdapter(() => {
      const store = new MemoryEventStore();
      return { store, replica: store };
    }),
    {
      name: 'journal file (AUDIT_STORE_FILE)',
      create: async () => {
        const dir = await mkdtemp(path.join(tmpdir(), 'audit-log-'));
        const store = await FileEventStore.open(path.join(dir, 'events.ndjson'), logger);
        return {
          store: { store, replica: store },
          close: async () => {
            await store.close();
            await rm(dir, { recursive: true, force: true });
          },
        };
      },
    },
    {
      name: MONGO_ADAPTER,
      skipReason: mongoSkipReason,
      create: async () => {
        const db = testDatabaseName('auditlog');
        const one = await connectMongo(MONGO_URL!, db, logger);
        const two = await connectMongo(MONGO_URL!, db, logger);
        const store = new MongoEventStore(one);
        await store.init();
        const replica = new MongoEventStore(two);
        await replica.init();
        return {
          store: { store, replica },
          close: async () => {
            await one.dropDatabase();
            await Promise.all([one.close(), two.close()]);
          },
        };
      },
    },
  ];
}

// ── the tree, computed independently from the events as served (RFC 9162 §2.1, recursively) ──
const H = (...parts: Uint8Array[]) => crypto.createHash('sha256').update(Buffer.concat(parts)).digest();
function mth(leafHashes: Uint8Array[]): Buffer {
  if (leafHashes.length === 0) return H();
  if (leafHashes.length === 1) return Buffer.from(leafHashes[0]!);
  const k = 2 ** Math.ceil(Math.log2(leafHashes.length) - 1);
  return H(Buffer.from([1]), mth(leafHashes.slice(0, k)), mth(leafHashes.slice(k)));
}
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** Every event of the tenant, oldest seq first (read through list, as served). */
async function served(store: AuditStore, tenant: string): Promise<AuditEvent[]> {
  const events = await store.list(tenant, { limit: 10_000 });
  return events.sort((a, b) => a.seq! - b.seq!);
}

describeStoreContract<Replicas>('LogStore', adapters(), (get) => {
  const store = () => get().store;

  it('when a tenant stores events, then they get seq 1, 2, … in the order stored, per tenant, and platform events none', async () => {
    const tenant = newId('tnt');
    const other = newId('tnt');
    const first = buildAuditEvent(tenant);
    await store().insert(first);
    const batch = [buildAuditEvent(tenant), buildAuditEvent(other), buildAuditEvent(tenant)];
    await store().insertMany(batch);
    const platform = buildAuditEvent(null, { type: 'ONBOARDING_REQUESTED' });
    await store().insert({ ...platform, seq: 99 });

    expect((await store().get(tenant, first.id))?.seq).toBe(1);
    expect((await store().get(tenant, batch[0]!.id))?.seq).toBe(2);
    expect((await store().get(tenant, batch[2]!.id))?.seq).toBe(3);
    expect((await store().get(other, batch[1]!.id))?.seq).toBe(1);
    expect(await store().logSize(tenant)).toBe(3);
    expect(await store().logSize(other)).toBe(1);
    expect(await store().logSize(newId('tnt'))).toBe(0);
    const heads = await store().logHeads();
    expect(heads).toEqual(expect.arrayContaining([{ tenantId: tenant, size: 3 }]));
  });

  it('when an event arrives with a seq of its own, then the store assigns the next one regardless', async () => {
    const tenant = newId('tnt');
    await store().insert({ ...buildAuditEvent(tenant), seq: 42 });
    expect((await served(store(), tenant)).map((e) => e.seq)).toEqual([1]);
  });

  it('when an event is redelivered, then it keeps its first seq and no seq is skipped', async () => {
    const tenant = newId('tnt');
    const [a, b, c] = [buildAuditEvent(tenant), buildAuditEvent(tenant), buildAuditEvent(tenant)];
    await store().insertMany([a!, b!]);
    await store().insert({ ...a!, data: { redelivered: true } });
    await store().insertMany([b!, c!, a!, c!]);
    const events = await served(store(), tenant);
    expect(events.map((e) => [e.id, e.seq])).toEqual([
      [a!.id, 1],
      [b!.id, 2],
      [c!.id, 3],
    ]);
    expect(events[0]!.data).toEqual(a!.data);
  });

  it('when events are stored, then every range hash is the RFC 9162 tree of the served events’ leaves', async () => {
    const tenant = newId('tnt');
    for (let i = 0; i < 5; i++)
      await store().insertMany(Array.from({ length: 3 + i }, () => buildAuditEvent(tenant, { data: { i } })));
    const leaves = (await served(store(), tenant)).map(auditLeafHash);
    expect(leaves).toHaveLength(25);
    const ranges = [
      [0, 25],
      [0, 16],
      [16, 24],
      [24, 25],
      [0, 7],
      [3, 4],
      [0, 1],
    ] as const;
    const hashes = await store().logHashes(tenant, ranges);
    expect(hashes.map(hex)).toEqual(ranges.map(([s, e]) => hex(mth(leaves.slice(s, e)))));
    await expect(store().logHashes(tenant, [[0, 26]])).rejects.toThrow();
  });

  it('when two replicas store one tenant’s events at once, some delivered to both, then seqs are 1…n gap-free, each event once, and the tree matches', async () => {
    const tenant = newId('tnt');
    const { store: one, replica: two } = get();
    const events = Array.from({ length: 120 }, (_, i) => buildAuditEvent(tenant, { data: { i } }));
    const batches = (from: number) =>
      Array.from({ length: 12 }, (_, b) => events.slice(from + b * 10, from + b * 10 + 10));
    // Both replicas get every batch (a redelivery to the other after a lost ack), in different orders.
    const ones = batches(0);
    const twos = [...batches(0)].reverse();
    await Promise.all([
      (async () => {
        for (const b of ones) await one.insertMany(b);
      })(),
      (async () => {
        for (const b of twos) await two.insertMany(b);
      })(),
    ]);
    const stored = await served(one, tenant);
    expect(stored.map((e) => e.seq)).toEqual(Array.from({ length: 120 }, (_, i) => i + 1));
    expect(new Set(stored.map((e) => e.id)).size).toBe(120);
    expect(await one.logSize(tenant)).toBe(120);
    const leaves = stored.map(auditLeafHash);
    const [root, half] = await two.logHashes(tenant, [
      [0, 120],
      [0, 64],
    ]);
    expect(hex(root!)).toBe(hex(mth(leaves)));
    expect(hex(half!)).toBe(hex(mth(leaves.slice(0, 64))));
    expect(hex((await one.logHashes(tenant, [[0, 120]]))[0]!)).toBe(hex(mth(leaves)));
  });

  it('when checkpoints are saved, then latest, get and the pages by size answer them, and a second of one size changes nothing', async () => {
    const tenant = newId('tnt');
    const cp = (size: number) => ({
      tenant_id: tenant,
      tree_size: size,
      root_hash: `root${size}`,
      issued_at: new Date(1_700_000_000_000 + size).toISOString(),
      jws: `jws${size}`,
    });
    expect(await store().latestCheckpoint(tenant)).toBeNull();
    for (const size of [3, 10, 7]) await store().saveCheckpoint(cp(size));
    await store().saveCheckpoint({ ...cp(10), jws: 'other' });
    await store().saveCheckpoint({ ...cp(1), tenant_id: newId('tnt') });
    expect(await store().latestCheckpoint(tenant)).toEqual(cp(10));
    expect(await store().getCheckpoint(tenant, 7)).toEqual(cp(7));
    expect(await store().getCheckpoint(tenant, 8)).toBeNull();
    expect((await store().listCheckpoints(tenant, { limit: 2 })).map((c) => c.tree_size)).toEqual([10, 7, 3]);
    expect(
      (await store().listCheckpoints(tenant, { limit: 2, beforeSize: 7 })).map((c) => c.tree_size),
    ).toEqual([3]);
  });
});
