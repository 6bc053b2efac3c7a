import { createLogger, fixedClock, newId } from '@mandate/shared';
import { CapturingPublisher, callService, callerFor, testTokens } from '@mandate/shared/src/testing';
import { createApp, type Deps } from '../src/app';
import { MemorySnapshots } from '../src/snapshots/mandate-snapshots';
import { MemoryMandateStore } from '../src/store/memory-mandate-store';
import { ExpirySweeper } from '../src/sweeper/expiry-sweeper';
import { buildMandate } from './support';
import { LocalSigner } from '../src/signing/local-signer';

const T0 = new Date('2031-03-01T10:00:00.000Z');
const later = (ms: number) => new Date(T0.getTime() + ms);
const logger = createLogger('sweeper-test', 'silent');

/** Two service instances over one store, like two mandates processes over one MongoDB. */
async function twoInstances() {
  const store = new MemoryMandateStore();
  const snapshots = new MemorySnapshots();
  const clock = fixedClock(T0);
  const publisher = new CapturingPublisher();
  const signer = await LocalSigner.create();
  const deps = (): Deps => ({ store, snapshots, publisher, signer, tokens: testTokens, logger, clock });
  const a = createApp(deps());
  const b = createApp(deps());
  const [sa, sb] = [await a.start(), await b.start()];
  return {
    store,
    snapshots,
    clock,
    publisher,
    urls: [sa.url, sb.url],
    sweepers: [
      new ExpirySweeper(deps(), { intervalMs: 10, batchSize: 7 }),
      new ExpirySweeper(deps(), { intervalMs: 10, batchSize: 7 }),
    ],
    stop: async () => {
      await a.stop();
      await b.stop();
    },
  };
}

describe('expiry', () => {
  let world: Awaited<ReturnType<typeof twoInstances>>;
  beforeEach(async () => {
    world = await twoInstances();
  });
  afterEach(async () => {
    await world.stop();
  });

  /** A mandate that expired 500 ms ago by the shared clock, not swept yet. */
  const dueMandate = async () => {
    const tenantId = newId('tnt');
    const m = await world.store.create(
      tenantId,
      buildMandate({ tenant_id: tenantId, expires_at: later(500).toISOString() }),
    );
    world.clock.set(later(1_000));
    return { tenantId, m };
  };

  it('when expires_at passes, then get, list and every lifecycle call report EXPIRED at once, before any sweep', async () => {
    const tenantId = newId('tnt');
    const caller = callerFor(tenantId);
    const created = await callService(world.urls[0]!, 'POST', '/v1/mandates', {
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
      expect((await callService(url, 'GET', '/v1/mandates?state=ACTIVE', { caller })).body.data).toEqual([]);
      for (const op of ['suspend', 'reactivate', 'revoke']) {
        const res = await callService(url, 'POST', `/v1/mandates/${created.body.id}/${op}`, { caller });
        expect({ op, status: res.status, body: res.body }).toEqual({
          op,
          status: 409,
          body: { error: 'CONFLICT', message: 'Mandate is expired' },
        });
      }
    }
    expect(world.publisher.events.filter((e) => e.type === 'MANDATE_EXPIRED')).toEqual([]);
  });

  it('when two sweepers (one per instance) race over the same store, then each due mandate is persisted EXPIRED and announced exactly once', async () => {
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

    const [a, b] = world.sweepers as [ExpirySweeper, ExpirySweeper];
    const counts = await Promise.all([a.sweepOnce(), b.sweepOnce(), a.sweepOnce(), b.sweepOnce()]);
    // Whatever a full batch of the other's leftovers made one skip, a later pass takes.
    counts.push(await a.sweepOnce(), await b.sweepOnce());
    expect(counts.reduce((x, y) => x + y, 0)).toBe(25);

    const expiredEvents = world.publisher.events.filter((e) => e.type === 'MANDATE_EXPIRED');
    expect(expiredEvents.map((e) => e.resource?.id).sort()).toEqual(due.map((m) => m.id).sort());
    for (const m of due) {
      const stored = await world.store.get(tenantId, m.id);
      expect(stored).toMatchObject({ state: 'EXPIRED', version: 2 });
      // The snapshot verify reads moved forward with it.
      expect(world.snapshots.read(tenantId, m.id)).toMatchObject({ state: 'EXPIRED', version: 2 });
    }
    expect(expiredEvents[0]).toMatchObject({
      tenant_id: tenantId,
      actor: { type: 'system' },
      request_id: null,
      data: { state: 'EXPIRED', version: 2 },
    });
    expect(await world.store.get(tenantId, notDue.id)).toMatchObject({ state: 'ACTIVE', version: 1 });
    expect(await world.store.get(tenantId, revoked.id)).toMatchObject({ state: 'REVOKED', version: 1 });

    // Nothing left to do: further passes announce nothing more.
    expect(await Promise.all([a.sweepOnce(), b.sweepOnce()])).toEqual([0, 0]);
    expect(world.publisher.events.filter((e) => e.type === 'MANDATE_EXPIRED')).toHaveLength(25);
  });

  it('when both sweepers run on their timers, then a due mandate is still announced exactly once', async () => {
    const { tenantId, m } = await dueMandate();
    world.sweepers.forEach((s) => s.start());
    const deadline = Date.now() + 10_000;
    while ((await world.store.get(tenantId, m.id))?.state !== 'EXPIRED' && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 10));
    // Give the loser time to (not) announce too.
    await new Promise((r) => setTimeout(r, 100));
    await Promise.all(world.sweepers.map((s) => s.stop()));
    expect(
      world.publisher.events.filter((e) => e.type === 'MANDATE_EXPIRED' && e.resource?.id === m.id),
    ).toHaveLength(1);
  });

  it('when a lifecycle call and the sweep race on an expiring mandate, then exactly one of them changes it', async () => {
    const { tenantId, m } = await dueMandate();
    const [swept, revoke] = await Promise.all([
      world.sweepers[0]!.sweepOnce(),
      callService(world.urls[1]!, 'POST', `/v1/mandates/${m.id}/revoke`, { caller: callerFor(tenantId) }),
    ]);
    expect({ swept, revoke: revoke.status }).toEqual({ swept: 1, revoke: 409 });
    expect(await world.store.get(tenantId, m.id)).toMatchObject({ state: 'EXPIRED', version: 2 });
  });
});

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
