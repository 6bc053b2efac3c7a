import fc from 'fast-check';
import { newId } from '@mandate/shared/core';
import { type AuditEvent } from '@mandate/shared/events';
import { anyEvent, describeStoreContract } from '@mandate/shared/testing';
import type { Authorization } from '../src/budget-contract';
import type { EventsOf, PeriodRef } from '../src/store/authorization-store';
import type { MandateStore } from '../src/store/mandate-store';
import { mandateStoreAdapters } from './support';

const NOW = new Date('2031-06-01T12:00:00.000Z');
const PERIOD = '2031-06-01T00:00:00.000Z';
const later = (ms: number) => new Date(NOW.getTime() + ms);

function buildAuthorization(mandateId: string, overrides: Partial<Authorization> = {}): Authorization {
  return {
    id: newId('sau'),
    mandate_id: mandateId,
    action: 'payments:create',
    resource: null,
    amount: 100,
    currency: 'EUR',
    status: 'HELD',
    captured_amount: 0,
    period_start: PERIOD,
    expires_at: later(15 * 60_000).toISOString(),
    created_at: NOW.toISOString(),
    updated_at: NOW.toISOString(),
    ...overrides,
  };
}

type Op =
  | { kind: 'hold'; amount: number; short: boolean }
  | { kind: 'capture'; pick: number; part: number }
  | { kind: 'void' | 'expire'; pick: number };

/** Records the events each change stored, with the totals they carry. */
const eventsFor =
  (tenantId: string, type: AuditEvent['type']): EventsOf =>
  (authorization, totals) => [
    anyEvent({
      type,
      tenantId,
      resource: { type: 'mandate', id: authorization.mandate_id },
      data: { authorization, budget: totals },
    }),
  ];

describeStoreContract<MandateStore>('AuthorizationStore', mandateStoreAdapters(), (getStore) => {
  const store = () => getStore().authorizations;
  const budget = (limit: number | null): PeriodRef => ({ start: PERIOD, limit });
  const hold = (tenantId: string, a: Authorization, limit: number | null = 1000, key?: string) =>
    store().hold(tenantId, a, budget(limit), key, eventsFor(tenantId, 'AUTHORIZATION_HELD'));

  it('when a hold fits, then it is HELD, counted once, and its event carries the totals after it', async () => {
    const tenantId = newId('tnt');
    const mandateId = newId('mdt');
    const a = buildAuthorization(mandateId, { amount: 400 });
    const outcome = await hold(tenantId, a);
    expect(outcome).toEqual({
      held: true,
      authorization: a,
      totals: { held: 400, captured: 0 },
      replayed: false,
    });
    expect(await store().getAuthorization(tenantId, a.id)).toEqual(a);
    expect(await store().periodTotals(tenantId, mandateId, PERIOD)).toEqual({ held: 400, captured: 0 });
    const events = (await getStore().pendingEvents(10_000)).filter(
      (e) => (e.data as { authorization?: Authorization }).authorization?.id === a.id,
    );
    expect(events.map((e) => [e.type, e.data.budget])).toEqual([
      ['AUTHORIZATION_HELD', { held: 400, captured: 0 }],
    ]);
  });

  it('when a hold does not fit, then nothing is written', async () => {
    const tenantId = newId('tnt');
    const mandateId = newId('mdt');
    await hold(tenantId, buildAuthorization(mandateId, { amount: 700 }));
    const refused = buildAuthorization(mandateId, { amount: 301 });
    expect(await hold(tenantId, refused)).toEqual({ held: false, totals: { held: 700, captured: 0 } });
    expect(await store().getAuthorization(tenantId, refused.id)).toBeNull();
    expect(await store().listAuthorizations(tenantId, mandateId, { limit: 10, now: NOW })).toHaveLength(1);
    // Exactly what is left still fits.
    expect((await hold(tenantId, buildAuthorization(mandateId, { amount: 300 }))).held).toBe(true);
  });

  it('when there is no budget (limit null), then every hold is recorded', async () => {
    const tenantId = newId('tnt');
    const mandateId = newId('mdt');
    const outcome = await hold(tenantId, buildAuthorization(mandateId, { amount: 10 ** 12 }), null);
    expect(outcome).toMatchObject({ held: true, totals: { held: 10 ** 12, captured: 0 } });
  });

  it('when holds race to open a fresh period, then every one that fits is held (none refused for the opening)', async () => {
    const tenantId = newId('tnt');
    const mandateId = newId('mdt');
    const racing = Array.from({ length: 20 }, () => buildAuthorization(mandateId, { amount: 10 }));
    const outcomes = await Promise.all(racing.map((a) => hold(tenantId, a)));
    expect(outcomes.filter((o) => !o.held)).toEqual([]);
    expect(await store().periodTotals(tenantId, mandateId, PERIOD)).toEqual({ held: 200, captured: 0 });
  });

  it('when a hold is retried with its request key, then the first is answered and nothing counts twice', async () => {
    const tenantId = newId('tnt');
    const mandateId = newId('mdt');
    const first = buildAuthorization(mandateId, { amount: 250 });
    await hold(tenantId, first, 1000, 'key-1');
    const retry = await hold(tenantId, buildAuthorization(mandateId, { amount: 250 }), 1000, 'key-1');
    expect(retry).toEqual({
      held: true,
      authorization: first,
      totals: { held: 250, captured: 0 },
      replayed: true,
    });
    // Concurrent retries of one new key also hold once.
    const racing = await Promise.all(
      [0, 1, 2].map(() => hold(tenantId, buildAuthorization(mandateId, { amount: 100 }), 1000, 'key-2')),
    );
    const ids = new Set(racing.map((r) => (r.held ? r.authorization.id : null)));
    expect(ids.size).toBe(1);
    expect(await store().periodTotals(tenantId, mandateId, PERIOD)).toEqual({ held: 350, captured: 0 });
  });

  it('when a hold is captured in part, then the captured amount counts and the rest is released', async () => {
    const tenantId = newId('tnt');
    const mandateId = newId('mdt');
    const a = buildAuthorization(mandateId, { amount: 12_000 });
    await hold(tenantId, a, 50_000);
    const captured = await store().settle(
      tenantId,
      a.id,
      { status: 'CAPTURED', captured_amount: 10_000 },
      later(1000),
      eventsFor(tenantId, 'AUTHORIZATION_CAPTURED'),
    );
    expect(captured).toEqual({
      settled: true,
      authorization: {
        ...a,
        status: 'CAPTURED',
        captured_amount: 10_000,
        updated_at: later(1000).toISOString(),
      },
      totals: { held: 0, captured: 10_000 },
    });
    // Settled once: a second capture or a void finds it CAPTURED.
    const again = await store().settle(
      tenantId,
      a.id,
      { status: 'VOIDED' },
      later(2000),
      eventsFor(tenantId, 'AUTHORIZATION_VOIDED'),
    );
    expect(again).toEqual({ settled: false, authorization: captured.authorization });
    expect(await store().periodTotals(tenantId, mandateId, PERIOD)).toEqual({ held: 0, captured: 10_000 });
  });

  it('when a capture asks more than was held, then nothing changes', async () => {
    const tenantId = newId('tnt');
    const a = buildAuthorization(newId('mdt'), { amount: 100 });
    await hold(tenantId, a);
    const outcome = await store().settle(
      tenantId,
      a.id,
      { status: 'CAPTURED', captured_amount: 101 },
      NOW,
      () => [],
    );
    expect(outcome).toEqual({ settled: false, authorization: a });
  });

  it('when a hold is past expires_at, then it can be expired but no longer captured or voided', async () => {
    const tenantId = newId('tnt');
    const mandateId = newId('mdt');
    const a = buildAuthorization(mandateId, { expires_at: later(60_000).toISOString() });
    await hold(tenantId, a);
    expect(await store().findDueAuthorizations(later(59_999), 1000)).not.toContainEqual({
      tenant_id: tenantId,
      id: a.id,
    });
    expect(
      await store().settle(tenantId, a.id, { status: 'EXPIRED' }, later(59_999), () => []),
    ).toMatchObject({
      settled: false,
    });
    expect(await store().findDueAuthorizations(later(60_000), 1000)).toContainEqual({
      tenant_id: tenantId,
      id: a.id,
    });
    expect(await store().settle(tenantId, a.id, { status: 'VOIDED' }, later(60_000), () => [])).toMatchObject(
      {
        settled: false,
      },
    );
    const expired = await store().settle(tenantId, a.id, { status: 'EXPIRED' }, later(60_000), () => []);
    expect(expired).toMatchObject({
      settled: true,
      authorization: { status: 'EXPIRED' },
      totals: { held: 0, captured: 0 },
    });
    expect(await store().findDueAuthorizations(later(60_000), 1000)).not.toContainEqual({
      tenant_id: tenantId,
      id: a.id,
    });
  });

  it('when another tenant asks, then authorizations and totals are invisible and untouchable', async () => {
    const tenantId = newId('tnt');
    const other = newId('tnt');
    const mandateId = newId('mdt');
    const a = buildAuthorization(mandateId);
    await hold(tenantId, a);
    expect(await store().getAuthorization(other, a.id)).toBeNull();
    expect(await store().listAuthorizations(other, mandateId, { limit: 10, now: NOW })).toEqual([]);
    expect(await store().periodTotals(other, mandateId, PERIOD)).toEqual({ held: 0, captured: 0 });
    expect(await store().heldAuthorizations(other, mandateId, 10)).toEqual([]);
    expect(await store().settle(other, a.id, { status: 'VOIDED' }, NOW, () => [])).toEqual({
      settled: false,
      authorization: null,
    });
    expect((await store().getAuthorization(tenantId, a.id))?.status).toBe('HELD');
  });

  it('when listing, then newest first, filtered by status, paged by id', async () => {
    const tenantId = newId('tnt');
    const mandateId = newId('mdt');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const a = buildAuthorization(mandateId, { amount: 10 });
      await hold(tenantId, a);
      ids.push(a.id);
    }
    await store().settle(tenantId, ids[1]!, { status: 'VOIDED' }, NOW, () => []);
    const list = async (q: { status?: Authorization['status']; limit?: number; afterId?: string } = {}) =>
      (await store().listAuthorizations(tenantId, mandateId, { limit: 10, now: NOW, ...q })).map((a) => a.id);
    expect(await list()).toEqual([...ids].reverse());
    expect(await list({ status: 'VOIDED' })).toEqual([ids[1]]);
    expect(await list({ status: 'HELD' })).toEqual([ids[4], ids[3], ids[2], ids[0]]);
    expect(await list({ limit: 2 })).toEqual([ids[4], ids[3], ids[2]]);
    expect(await list({ afterId: ids[2] })).toEqual([ids[1], ids[0]]);
    expect((await store().heldAuthorizations(tenantId, mandateId, 10)).map((a) => a.id).sort()).toEqual(
      [ids[0], ids[2], ids[3], ids[4]].sort(),
    );
  });

  /**
   * Any interleaving of holds, captures, voids and expiries from concurrent callers (docs/API.md#budgets):
   * in the period, 0 ≤ held, 0 ≤ captured, held + captured ≤ amount at every step a caller sees;
   * a refused hold changes nothing; and the final totals are the sum of the answers the callers got.
   */
  it('when many callers hold, capture, void and expire concurrently, then the budget is never exceeded and the totals add up', async () => {
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({
        kind: fc.constant('hold' as const),
        amount: fc.integer({ min: 1, max: 400 }),
        short: fc.boolean(),
      }),
      fc.record({
        kind: fc.constant('capture' as const),
        pick: fc.nat(),
        part: fc.integer({ min: 0, max: 100 }),
      }),
      fc.record({ kind: fc.constant('void' as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant('expire' as const), pick: fc.nat() }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 100, max: 2000 }),
        fc.array(fc.array(op, { minLength: 1, maxLength: 8 }), { minLength: 2, maxLength: 6 }),
        async (limit, callers) => {
          const tenantId = newId('tnt');
          const mandateId = newId('mdt');
          const seen: Authorization[] = [];
          /** What the callers were told, per authorization: its amount held, then its final state. */
          const answered = new Map<string, Authorization>();
          const refused: string[] = [];
          const settledTwice: string[] = [];
          const check = (t: { held: number; captured: number }) => {
            expect(t.held).toBeGreaterThanOrEqual(0);
            expect(t.captured).toBeGreaterThanOrEqual(0);
            expect(t.held + t.captured).toBeLessThanOrEqual(limit);
          };
          // Expiry needs the hold past expires_at: "short" holds expire at NOW, so only they may be expired.
          const run = async (ops: Op[]) => {
            for (const o of ops) {
              if (o.kind === 'hold') {
                const a = buildAuthorization(mandateId, {
                  amount: o.amount,
                  expires_at: (o.short ? NOW : later(3_600_000)).toISOString(),
                });
                const out = await hold(tenantId, a, limit);
                check(out.totals);
                if (out.held) {
                  seen.push(out.authorization);
                  answered.set(a.id, out.authorization);
                } else {
                  // Refused: nothing of it is stored (and the final totals below count nothing for it).
                  refused.push(a.id);
                }
                continue;
              }
              if (seen.length === 0) continue;
              const target = seen[o.pick % seen.length]!;
              const now = o.kind === 'expire' ? later(1) : new Date(NOW.getTime() - 1);
              const settlement =
                o.kind === 'capture'
                  ? {
                      status: 'CAPTURED' as const,
                      captured_amount: Math.floor((target.amount * o.part) / 100),
                    }
                  : { status: o.kind === 'void' ? ('VOIDED' as const) : ('EXPIRED' as const) };
              const out = await store().settle(tenantId, target.id, settlement, now, () => []);
              if (out.settled) {
                check(out.totals);
                // Settled once: nobody else was told this authorization left HELD.
                if (answered.get(target.id)?.status !== 'HELD') settledTwice.push(target.id);
                answered.set(target.id, out.authorization);
              }
            }
          };
          await Promise.all(callers.map(run));
          expect(settledTwice).toEqual([]);
          for (const id of refused) expect(await store().getAuthorization(tenantId, id)).toBeNull();
          const totals = await store().periodTotals(tenantId, mandateId, PERIOD);
          check(totals);
          const all = [...answered.values()];
          expect(totals).toEqual({
            held: all.filter((a) => a.status === 'HELD').reduce((s, a) => s + a.amount, 0),
            captured: all.filter((a) => a.status === 'CAPTURED').reduce((s, a) => s + a.captured_amount, 0),
          });
          // What the store holds is what the callers were told.
          for (const a of all) expect(await store().getAuthorization(tenantId, a.id)).toEqual(a);
        },
      ),
      // Each run is a few dozen round trips on MongoDB: fewer runs there, the same properties.
      { numRuns: getStore().kind === 'memory' ? 60 : 40 },
    );
  }, 180_000);
});
