import { fixedClock, newId } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { type AuditEvent } from '@mandate/shared/events';
import { connectMongo } from '@mandate/shared/data';
import {
  CapturingPublisher,
  MONGO_ADAPTER,
  MONGO_URL,
  callService,
  callerFor,
  describeIfAvailable,
  mongoSkipReason,
  testDatabaseName,
  testTokens,
} from '@mandate/shared/testing';
import { createApp, type Deps } from '../src/app';
import type { MandateState } from '../src/domain/mandate';
import type { MandateStore } from '../src/store/mandate-store';
import { MemoryMandateStore } from '../src/store/memory-mandate-store';
import { MongoMandateStore } from '../src/store/mongo-mandate-store';
import { ExpirySweeper } from '../src/sweeper/expiry-sweeper';
import { MemorySnapshots } from './memory-snapshots';
import { buildMandate } from './support';
import { LocalSigner } from '../src/signing/local-signer';

const T0 = new Date('2031-03-01T10:00:00.000Z');
const later = (ms: number) => new Date(T0.getTime() + ms);
const logger = createLogger('sweeper-test', 'silent');

/**
 * One store as two mandates processes see it: the memory store shared by both instances, or two
 * Mongo stores on two connections to one database.
 */
interface SharedStore {
  name: string;
  skipReason?: string;
  open(): Promise<{ stores: [MandateStore, MandateStore]; close(): Promise<void> }>;
}
const SHARED_STORES: SharedStore[] = [
  {
    name: 'memory',
    open: async () => {
      const store = new MemoryMandateStore();
      return { stores: [store, store], close: async () => undefined };
    },
  },
  {
    name: MONGO_ADAPTER,
    skipReason: mongoSkipReason,
    open: async () => {
      const db = testDatabaseName('sweeper');
      const connections = [
        await connectMongo(MONGO_URL!, db, logger),
        await connectMongo(MONGO_URL!, db, logger),
      ];
      const stores: [MandateStore, MandateStore] = [
        await MongoMandateStore.create(connections[0]!),
        await MongoMandateStore.create(connections[1]!),
      ];
      return {
        stores,
        close: async () => {
          await connections[0]!.dropDatabase();
          for (const c of connections) await c.close();
        },
      };
    },
  },
];

/**
 * The seam that orders a race: while a hold is set for a target state, every store transition to
 * that state (on either instance) waits until the test releases it, after the caller has read the
 * mandate and decided. Nothing in the service changes; the store is wrapped.
 */
function transitionGate() {
  const holds = new Map<MandateState, { arrived: number; release: () => void; released: Promise<void> }>();
  const waiters: (() => void)[] = [];
  const wrap = (store: MandateStore): MandateStore =>
    new Proxy(store, {
      get(target, prop) {
        if (prop === 'transition') {
          return async (...args: Parameters<MandateStore['transition']>) => {
            const hold = holds.get(args[3].state);
            if (hold) {
              hold.arrived++;
              waiters.splice(0).forEach((w) => w());
              await hold.released;
            }
            return target.transition(...args);
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  return {
    wrap,
    /** Holds transitions to `state`; answers when `count` of them are waiting, and the release. */
    hold(state: MandateState) {
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      const hold = { arrived: 0, release, released };
      holds.set(state, hold);
      return {
        arrived: async (count: number) => {
          const deadline = Date.now() + 10_000;
          while (hold.arrived < count) {
            if (Date.now() > deadline) throw new Error(`${count} transitions to ${state} never arrived`);
            await new Promise<void>((r) => waiters.push(r));
          }
        },
        release: () => {
          holds.delete(state);
          hold.release();
        },
      };
    },
  };
}

/** Two service instances (each with its sweeper) over one store, like two mandates processes. */
async function twoInstances(shared: SharedStore) {
  const opened = await shared.open();
  const gate = transitionGate();
  const snapshots = new MemorySnapshots();
  const clock = fixedClock(T0);
  const publisher = new CapturingPublisher();
  const signer = await LocalSigner.create();
  const deps = (i: 0 | 1): Deps => ({
    store: gate.wrap(opened.stores[i]),
    snapshots,
    publisher,
    signer,
    tokens: testTokens,
    logger,
    clock,
  });
  const a = createApp(deps(0));
  const b = createApp(deps(1));
  const [sa, sb] = [await a.start(), await b.start()];
  const sweepers = [
    new ExpirySweeper(deps(0), { intervalMs: 10, batchSize: 7 }),
    new ExpirySweeper(deps(1), { intervalMs: 10, batchSize: 7 }),
  ] as const;
  return {
    store: opened.stores[0],
    gate,
    snapshots,
    clock,
    publisher,
    urls: [sa.url, sb.url] as const,
    sweepers,
    /** Both sweepers at once, twice over: the counts of mandates each pass expired. */
    sweepBoth: async () => {
      const counts = await Promise.all([sweepers[0].sweepOnce(), sweepers[1].sweepOnce()]);
      return counts[0] + counts[1];
    },
    /** The distinct events of this type per mandate (the relay publishes at least once: ids count). */
    eventIds: (type: string) => {
      const ids = new Map<string, Set<string>>();
      for (const e of publisher.events.filter((e: AuditEvent) => e.type === type))
        ids.set(e.resource!.id, (ids.get(e.resource!.id) ?? new Set()).add(e.id));
      return ids;
    },
    stop: async () => {
      await Promise.all(sweepers.map((s) => s.stop()));
      await a.stop();
      await b.stop();
      await opened.close();
    },
  };
}

for (const shared of SHARED_STORES) {
  describeIfAvailable(
    !shared.skipReason,
    `expiry — two instances over one ${shared.name} store`,
    shared.skipReason ?? '',
    () => {
      let world: Awaited<ReturnType<typeof twoInstances>>;
      beforeEach(async () => {
        world = await twoInstances(shared);
      });
      afterEach(async () => {
        await world.stop();
      });

      /** A mandate of a new tenant that expires 500 ms after T0 (the clock is at T0). */
      const expiring = async () => {
        const tenantId = newId('tnt');
        const m = await world.store.create(
          tenantId,
          buildMandate({ tenant_id: tenantId, expires_at: later(500).toISOString() }),
        );
        return { tenantId, m, caller: callerFor(tenantId) };
      };
      const revokeOn = (url: string, tenantId: string, id: string) =>
        callService(url, 'POST', `/v1/mandates/${id}/revoke`, { caller: callerFor(tenantId) });

      it('when expires_at passes, then get, list and every lifecycle call report EXPIRED at once, before any sweep', async () => {
        const tenantId = newId('tnt');
        const caller = callerFor(tenantId);
        const created = await callService(world.urls[0], 'POST', '/v1/mandates', {
          caller,
          body: { principal: 'a', delegate: 'b', expires_at: later(60_000).toISOString() },
        });
        expect(created.status).toBe(201);
        world.clock.set(later(60_000));
        for (const url of world.urls) {
          expect(
            (await callService(url, 'GET', `/v1/mandates/${created.body.id}`, { caller })).body,
          ).toMatchObject({ state: 'EXPIRED', version: 1 });
          const listed = await callService(url, 'GET', '/v1/mandates?state=EXPIRED', { caller });
          expect(listed.body.data.map((m: { id: string }) => m.id)).toEqual([created.body.id]);
          expect((await callService(url, 'GET', '/v1/mandates?state=ACTIVE', { caller })).body.data).toEqual(
            [],
          );
          for (const op of ['suspend', 'reactivate', 'revoke']) {
            const res = await callService(url, 'POST', `/v1/mandates/${created.body.id}/${op}`, { caller });
            expect({ op, status: res.status, body: res.body }).toEqual({
              op,
              status: 409,
              body: { error: 'CONFLICT', message: 'Mandate is expired' },
            });
          }
        }
        expect(world.eventIds('MANDATE_EXPIRED').size).toBe(0);
      });

      it('when two sweepers (one per instance) sweep the same store at once, then each due mandate is persisted EXPIRED with exactly one MANDATE_EXPIRED, and a revoked one is never expired', async () => {
        const tenantId = newId('tnt');
        const due = [];
        for (let i = 0; i < 25; i++) {
          const state = i % 3 === 0 ? 'SUSPENDED' : 'ACTIVE';
          due.push(
            await world.store.create(
              tenantId,
              buildMandate({ tenant_id: tenantId, state, expires_at: later(1_000 + i).toISOString() }),
            ),
          );
        }
        const notDue = await world.store.create(
          tenantId,
          buildMandate({ tenant_id: tenantId, expires_at: later(3_600_000).toISOString() }),
        );
        const revoked = await world.store.create(
          tenantId,
          buildMandate({ tenant_id: tenantId, state: 'REVOKED', expires_at: later(10).toISOString() }),
        );
        world.clock.set(later(60_000));

        const [a, b] = world.sweepers;
        const counts = await Promise.all([a.sweepOnce(), b.sweepOnce(), a.sweepOnce(), b.sweepOnce()]);
        // Whatever a full batch of the other's leftovers made one skip, a later pass takes.
        counts.push(await a.sweepOnce(), await b.sweepOnce());
        expect(counts.reduce((x, y) => x + y, 0)).toBe(25);

        const expired = world.eventIds('MANDATE_EXPIRED');
        expect([...expired.keys()].sort()).toEqual(due.map((m) => m.id).sort());
        expect([...expired.values()].map((ids) => ids.size)).toEqual(due.map(() => 1));
        for (const m of due) {
          const stored = await world.store.get(tenantId, m.id);
          expect(stored).toMatchObject({ state: 'EXPIRED', version: 2 });
          // The snapshot verify reads moved forward with it.
          expect(world.snapshots.read(tenantId, m.id)).toMatchObject({ state: 'EXPIRED', version: 2 });
        }
        expect(world.publisher.events.find((e) => e.type === 'MANDATE_EXPIRED')).toMatchObject({
          tenant_id: tenantId,
          actor: { type: 'system' },
          request_id: null,
          data: { state: 'EXPIRED', version: 2 },
        });
        expect(await world.store.get(tenantId, notDue.id)).toMatchObject({ state: 'ACTIVE', version: 1 });
        expect(await world.store.get(tenantId, revoked.id)).toMatchObject({ state: 'REVOKED', version: 1 });

        // Nothing left to do: further passes expire and announce nothing more.
        expect(await Promise.all([a.sweepOnce(), b.sweepOnce()])).toEqual([0, 0]);
        expect([...world.eventIds('MANDATE_EXPIRED').values()].map((ids) => ids.size)).toEqual(
          due.map(() => 1),
        );
      });

      it('when both sweepers run on their timers, then a due mandate is announced exactly once', async () => {
        const { tenantId, m } = await expiring();
        world.clock.set(later(1_000));
        world.sweepers.forEach((s) => s.start());
        const deadline = Date.now() + 10_000;
        while ((await world.store.get(tenantId, m.id))?.state !== 'EXPIRED' && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 10));
        // Both timers stopped and their passes finished: nothing can announce it any more.
        await Promise.all(world.sweepers.map((s) => s.stop()));
        expect(await world.store.get(tenantId, m.id)).toMatchObject({ state: 'EXPIRED', version: 2 });
        expect(world.eventIds('MANDATE_EXPIRED').get(m.id)?.size).toBe(1);
      });

      it('when a revoke lands before the clock passes expires_at, then neither sweeper expires the mandate afterwards', async () => {
        const { tenantId, m } = await expiring();
        const revoke = await revokeOn(world.urls[1], tenantId, m.id);
        expect(revoke.body).toMatchObject({ state: 'REVOKED', version: 2 });
        world.clock.set(later(1_000));
        expect(await world.sweepBoth()).toBe(0);
        world.clock.set(later(3_600_000));
        expect(await world.sweepBoth()).toBe(0);
        expect(await world.store.get(tenantId, m.id)).toMatchObject({ state: 'REVOKED', version: 2 });
        expect(world.eventIds('MANDATE_EXPIRED').has(m.id)).toBe(false);
        expect(world.eventIds('MANDATE_REVOKED').get(m.id)?.size).toBe(1);
      });

      it('when a revoke decided before expiry writes after both sweepers have read the mandate as due, then the revoke wins and neither sweeper expires it', async () => {
        const { tenantId, m } = await expiring();
        const revokes = world.gate.hold('REVOKED');
        const expiries = world.gate.hold('EXPIRED');
        // The revoke reads the mandate ACTIVE at T0 and waits at its write.
        const revoking = revokeOn(world.urls[1], tenantId, m.id);
        await revokes.arrived(1);
        // The clock passes expires_at; both sweepers find the mandate due, read it ACTIVE, and wait at their writes.
        world.clock.set(later(1_000));
        const sweeping = world.sweepBoth();
        await expiries.arrived(2);
        revokes.release();
        expect((await revoking).body).toMatchObject({ state: 'REVOKED', version: 2 });
        expiries.release();
        expect(await sweeping).toBe(0);
        expect(await world.sweepBoth()).toBe(0);
        expect(await world.store.get(tenantId, m.id)).toMatchObject({ state: 'REVOKED', version: 2 });
        expect(world.snapshots.read(tenantId, m.id)).toMatchObject({ state: 'REVOKED', version: 2 });
        expect(world.eventIds('MANDATE_EXPIRED').has(m.id)).toBe(false);
        expect(world.eventIds('MANDATE_REVOKED').get(m.id)?.size).toBe(1);
      });

      it('when a revoke decided before expiry writes after a sweeper has expired the mandate, then the revoke decides again and answers 409, and the mandate is expired exactly once', async () => {
        const { tenantId, m } = await expiring();
        const revokes = world.gate.hold('REVOKED');
        const revoking = revokeOn(world.urls[1], tenantId, m.id);
        await revokes.arrived(1);
        world.clock.set(later(1_000));
        expect(await world.sweepBoth()).toBe(1);
        revokes.release();
        const revoke = await revoking;
        expect({ status: revoke.status, body: revoke.body }).toEqual({
          status: 409,
          body: { error: 'CONFLICT', message: 'Mandate is expired' },
        });
        expect(await world.sweepBoth()).toBe(0);
        expect(await world.store.get(tenantId, m.id)).toMatchObject({ state: 'EXPIRED', version: 2 });
        expect(world.eventIds('MANDATE_EXPIRED').get(m.id)?.size).toBe(1);
        expect(world.eventIds('MANDATE_REVOKED').has(m.id)).toBe(false);
      });

      it('when a revoke and both sweepers run at the same moment after expiry, then exactly one MANDATE_EXPIRED and the revoke answers 409', async () => {
        const { tenantId, m } = await expiring();
        world.clock.set(later(1_000));
        const [swept, revoke] = await Promise.all([
          world.sweepBoth(),
          revokeOn(world.urls[1], tenantId, m.id),
        ]);
        expect({ swept, revoke: revoke.status }).toEqual({ swept: 1, revoke: 409 });
        expect(await world.store.get(tenantId, m.id)).toMatchObject({ state: 'EXPIRED', version: 2 });
        expect(world.eventIds('MANDATE_EXPIRED').get(m.id)?.size).toBe(1);
      });
    },
  );
}

describe('MemoryMandateStore.findDue', () => {
  it('when mandates of several tenants are past expiry, then findDue returns only ACTIVE/SUSPENDED ones past it, soonest first, up to the limit', async () => {
    const store = new MemoryMandateStore();
    const [t1, t2] = [newId('tnt'), newId('tnt')];
    const m1 = await store.create(t1, buildMandate({ tenant_id: t1, expires_at: later(20).toISOString() }));
    const m2 = await store.create(
      t2,
      buildMandate({ tenant_id: t2, state: 'SUSPENDED', expires_at: later(10).toISOString() }),
    );
    await store.create(t2, buildMandate({ tenant_id: t2, expires_at: later(99_999).toISOString() }));
    await store.create(
      t2,
      buildMandate({ tenant_id: t2, state: 'REVOKED', expires_at: later(5).toISOString() }),
    );
    await store.create(t1, buildMandate({ tenant_id: t1, expires_at: null }));
    const due = await store.findDue(later(1_000), 10);
    expect(due.map((m) => m.id)).toEqual([m2.id, m1.id]);
    expect((await store.findDue(later(1_000), 1)).map((m) => m.id)).toEqual([m2.id]);
  });
});
