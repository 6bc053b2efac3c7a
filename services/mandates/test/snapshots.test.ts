import { Redis } from 'ioredis';
import { fixedClock, newId } from '@mandate/shared/core';
import { snapshotKey } from '@mandate/shared/mandate';
import { testSnapshotMac } from '@mandate/shared/testing';
import type { MandateSnapshots } from '../src/snapshots/mandate-snapshots';
import type { Mandate } from '../src/domain/mandate';
import { applyOperation, readForVerify } from '../src/domain/mandates';
import { MemoryMandateStore } from '../src/store/memory-mandate-store';
import { MemorySnapshots } from './memory-snapshots';
import { RedisSnapshots } from '../src/snapshots/redis-snapshots';
import { buildMandate } from './support';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** What a reader (verify) would use: the hash's m when v ≥ min (and, in Redis, its MAC checks), else nothing. */
type Read = (tenantId: string, id: string) => Promise<{ version: number; state: string } | null>;

const adapters: [
  string,
  () => Promise<{ snapshots: MandateSnapshots; read: Read; close(): Promise<void> }>,
][] = [
  [
    'memory',
    async () => {
      const snapshots = new MemorySnapshots();
      return { snapshots, read: async (t, id) => snapshots.read(t, id), close: async () => {} };
    },
  ],
  [
    'redis (real server)',
    async () => {
      const prefix = `test:${newId('req')}:`;
      const redis = new Redis(REDIS_URL);
      const snapshots = RedisSnapshots.over(redis, { prefix, ttlSeconds: 120, mac: testSnapshotMac });
      const read: Read = async (t, id) => {
        const [v, min, m, s] = await redis.hmget(snapshotKey(prefix, t, id), 'v', 'min', 'm', 's');
        return m && Number(v) >= Number(min ?? 0) && testSnapshotMac.check(m, s) ? JSON.parse(m) : null;
      };
      return {
        snapshots,
        read,
        close: async () => {
          const keys = await redis.keys(`${prefix}*`);
          if (keys.length) await redis.del(...keys);
          await redis.quit();
        },
      };
    },
  ],
];

describe.each(adapters)('mandate snapshots — %s', (_name, create) => {
  let world: Awaited<ReturnType<typeof create>>;
  beforeAll(async () => {
    world = await create();
  });
  afterAll(async () => {
    await world.close();
  });
  const mandate = (
    version: number,
    state: 'ACTIVE' | 'SUSPENDED' | 'REVOKED' = 'ACTIVE',
    id = 'mdt_x',
    tenant_id = 'tnt_x',
  ) => buildMandate({ id, tenant_id, version, state });

  it('when an older version is written after a newer one, then the newer one stays', async () => {
    const [t, id] = [newId('tnt'), newId('mdt')];
    expect(await world.snapshots.write(mandate(3, 'SUSPENDED', id, t))).toBe(true);
    expect(await world.snapshots.write(mandate(2, 'ACTIVE', id, t))).toBe(false);
    expect(await world.snapshots.write(mandate(3, 'ACTIVE', id, t))).toBe(false);
    expect(await world.read(t, id)).toMatchObject({ version: 3, state: 'SUSPENDED' });
  });

  it('when a fence is raised above the snapshot, then readers get nothing until a snapshot at the fence is written, and older ones are refused', async () => {
    const [t, id] = [newId('tnt'), newId('mdt')];
    await world.snapshots.write(mandate(1, 'ACTIVE', id, t));
    await world.snapshots.fence(t, id, 2);
    expect(await world.read(t, id)).toBeNull();
    expect(await world.snapshots.write(mandate(1, 'ACTIVE', id, t))).toBe(false);
    // A lower fence never lowers it.
    await world.snapshots.fence(t, id, 1);
    expect(await world.read(t, id)).toBeNull();
    expect(await world.snapshots.write(mandate(2, 'REVOKED', id, t))).toBe(true);
    expect(await world.read(t, id)).toMatchObject({ version: 2, state: 'REVOKED' });
  });

  it('when many writers race with versions in random order, then the highest version wins', async () => {
    const [t, id] = [newId('tnt'), newId('mdt')];
    const versions = Array.from({ length: 50 }, (_, i) => i + 1).sort(() => Math.random() - 0.5);
    await Promise.all(versions.map((v) => world.snapshots.write(mandate(v, 'ACTIVE', id, t))));
    expect(await world.read(t, id)).toMatchObject({ version: 50 });
  });
});

describe('mandate snapshots in Redis — MAC (real server)', () => {
  const prefix = `test:${newId('req')}:`;
  const redis = new Redis(REDIS_URL);
  const snapshots = RedisSnapshots.over(redis, { prefix, ttlSeconds: 120, mac: testSnapshotMac });
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    await redis.quit();
  });

  it('when a snapshot is written, then field s is the MAC of exactly the stored JSON', async () => {
    const m = buildMandate({ tenant_id: newId('tnt'), version: 3 });
    expect(await snapshots.write(m)).toBe(true);
    const [json, mac] = await redis.hmget(snapshotKey(prefix, m.tenant_id, m.id), 'm', 's');
    expect(testSnapshotMac.check(json!, mac)).toBe(true);
    expect(testSnapshotMac.check(json!.replace('"ACTIVE"', '"REVOKED"'), mac)).toBe(false);
  });

  it('when the stored snapshot of the same version has no MAC (written before signing), then a write replaces it', async () => {
    const m = buildMandate({ tenant_id: newId('tnt'), version: 2 });
    const key = snapshotKey(prefix, m.tenant_id, m.id);
    await redis.hset(key, 'v', '2', 'm', JSON.stringify(m));
    expect(await snapshots.write(m)).toBe(true);
    expect(testSnapshotMac.check(JSON.stringify(m), await redis.hget(key, 's'))).toBe(true);
    // With its MAC in place, the same version is not written again.
    expect(await snapshots.write(m)).toBe(false);
  });
});

describe('a verify refill when Redis lost its data', () => {
  it('when a revocation commits while a refill is on its way and Redis comes back empty before the refill writes, then the snapshot ends at the revoked version, never the older one', async () => {
    const store = new MemoryMandateStore();
    const tenantId = newId('tnt');
    const mandate = await store.create(tenantId, buildMandate({ tenant_id: tenantId }));
    let redis = new MemorySnapshots();
    let raced = false;
    const deps = {
      store,
      clock: fixedClock(new Date()),
      snapshots: {
        kind: 'memory' as const,
        fence: (t: string, m: string, v: number) => redis.fence(t, m, v),
        write: async (m: Mandate) => {
          if (!raced) {
            raced = true;
            // Between the refill's read and its write: a revocation (fence, commit, snapshot), then
            // Redis restarted empty, its fence gone with it.
            await applyOperation({ ...deps, snapshots: redis }, tenantId, mandate.id, 'revoke');
            redis = new MemorySnapshots();
          }
          return redis.write(m);
        },
        ping: async () => undefined,
        close: async () => undefined,
      },
    };
    // The read in flight answers what it read (it began before the revocation)...
    expect((await readForVerify(deps, tenantId, mandate.id)).state).toBe('ACTIVE');
    // ...but what the next verify reads is the revoked version.
    expect(redis.read(tenantId, mandate.id)).toMatchObject({ state: 'REVOKED', version: 2 });
  });
});
