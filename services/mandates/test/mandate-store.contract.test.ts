import { newId } from '@mandate/shared/core';
import { type AuditEvent } from '@mandate/shared/events';
import { anyEvent, describeStoreContract, walkPages } from '@mandate/shared/testing';
import type { Mandate } from '../src/domain/mandate';
import type { MandateStore } from '../src/store/mandate-store';
import { buildMandate, mandateStoreAdapters } from './support';

const NOW = new Date('2031-06-01T12:00:00.000Z');
const minutes = (n: number) => new Date(NOW.getTime() + n * 60_000).toISOString();

describeStoreContract<MandateStore>('MandateStore', mandateStoreAdapters(), (getStore) => {
  const seed = async (tenantId: string, overrides: Partial<Mandate> = {}) =>
    getStore().create(tenantId, buildMandate({ tenant_id: tenantId, ...overrides }));
  const listAll = (tenantId: string, q: Partial<Parameters<MandateStore['list']>[1]> = {}) =>
    getStore().list(tenantId, { limit: 100, now: NOW, ...q });

  it('when a mandate is created, then get returns exactly it as a plain object', async () => {
    const tenantId = newId('tnt');
    const mandate = buildMandate({
      tenant_id: tenantId,
      principal: { id: 'p', type: 'organization', name: 'Acme' },
      scope: {
        actions: ['payments:*'],
        resources: ['acct:1'],
        constraints: { max_amount: 5000, currency: 'EUR' },
      },
      valid_from: minutes(-5),
      expires_at: minutes(60),
      metadata: { ref: 'x' },
    });
    expect(await getStore().create(tenantId, mandate)).toEqual(mandate);
    const got = await getStore().get(tenantId, mandate.id);
    expect(got).toEqual(mandate);
    expect(Object.keys(got!).sort()).toEqual(Object.keys(mandate).sort());
  });

  it('when optional parts are absent, then they come back absent (not defaulted), with metadata {}', async () => {
    const tenantId = newId('tnt');
    const mandate = await seed(tenantId, {
      principal: { id: 'only-id' },
      scope: { actions: ['*'] },
      metadata: {},
    });
    const got = await getStore().get(tenantId, mandate.id);
    expect(got?.principal).toEqual({ id: 'only-id' });
    expect(got?.scope).toEqual({ actions: ['*'] });
    expect(got?.metadata).toEqual({});
    expect(got?.valid_from).toBeNull();
    expect(got?.expires_at).toBeNull();
  });

  it('when another tenant asks, then the mandate is invisible and untouchable', async () => {
    const tenantA = newId('tnt');
    const tenantB = newId('tnt');
    const mandate = await seed(tenantA);
    expect(await getStore().get(tenantB, mandate.id)).toBeNull();
    expect(await listAll(tenantB)).toEqual([]);
    expect(
      await getStore().transition(tenantB, mandate.id, 1, {
        state: 'REVOKED',
        version: 2,
        updated_at: minutes(0),
      }),
    ).toBeNull();
    expect((await getStore().get(tenantA, mandate.id))?.state).toBe('ACTIVE');
  });

  it('when a mandate id is created twice, then the second create is a CONFLICT and changes nothing', async () => {
    const tenantId = newId('tnt');
    const first = await seed(tenantId, { metadata: { ref: 'first' } });
    const event = anyEvent({
      type: 'MANDATE_CREATED',
      tenantId,
      resource: { type: 'mandate', id: first.id },
      data: {},
    });
    const duplicate = buildMandate({ ...first, metadata: { ref: 'second' } });
    await expect(getStore().create(tenantId, duplicate, [event])).rejects.toMatchObject({
      code: 'CONFLICT',
      status: 409,
    });
    expect(await getStore().get(tenantId, first.id)).toEqual(first);
    expect((await getStore().pendingEvents(1000)).map((e) => e.id)).not.toContain(event.id);
  });

  it('when a mandate is created with a request key, then that key finds it and its request digest (in its tenant only), and a second mandate under the key is a CONFLICT that stores nothing', async () => {
    const tenantId = newId('tnt');
    const key = `key-${newId('req')}`;
    const request = { key, digest: 'digest-of-the-first-request' };
    const first = buildMandate({ tenant_id: tenantId });
    expect(await getStore().create(tenantId, first, [], undefined, request)).toEqual(first);
    expect(await getStore().findByRequestKey(tenantId, key)).toEqual({
      mandate: first,
      digest: request.digest,
    });
    expect(await getStore().findByRequestKey(newId('tnt'), key)).toBeNull();
    expect(await getStore().findByRequestKey(tenantId, `${key}-other`)).toBeNull();
    const second = buildMandate({ tenant_id: tenantId });
    const event = anyEvent({
      type: 'MANDATE_CREATED',
      tenantId,
      resource: { type: 'mandate', id: second.id },
      data: {},
    });
    await expect(
      getStore().create(tenantId, second, [event], undefined, { key, digest: 'another-request' }),
    ).rejects.toMatchObject({ status: 409 });
    expect(await getStore().get(tenantId, second.id)).toBeNull();
    expect((await getStore().pendingEvents(1000)).map((e) => e.id)).not.toContain(event.id);
    // Another tenant's identical key is another key; mandates without one are never found by one.
    const elsewhere = newId('tnt');
    await getStore().create(elsewhere, buildMandate({ tenant_id: elsewhere }), [], undefined, request);
    await seed(tenantId);
    expect(await getStore().findByRequestKey(tenantId, key)).toEqual({
      mandate: first,
      digest: request.digest,
    });
  });

  it('when an id does not exist, then get is null', async () => {
    expect(await getStore().get(newId('tnt'), newId('mdt'))).toBeNull();
  });

  it('when listing, then items come newest first and filters by principal and delegate apply', async () => {
    const tenantId = newId('tnt');
    const a = await seed(tenantId, { principal: { id: 'alice' }, delegate: { id: 'bot-1' } });
    const b = await seed(tenantId, { principal: { id: 'bob' }, delegate: { id: 'bot-1' } });
    const c = await seed(tenantId, { principal: { id: 'alice' }, delegate: { id: 'bot-2' } });
    expect((await listAll(tenantId)).map((m) => m.id)).toEqual([c.id, b.id, a.id]);
    expect((await listAll(tenantId, { principal_id: 'alice' })).map((m) => m.id)).toEqual([c.id, a.id]);
    expect((await listAll(tenantId, { delegate_id: 'bot-1' })).map((m) => m.id)).toEqual([b.id, a.id]);
    expect(
      (await listAll(tenantId, { principal_id: 'alice', delegate_id: 'bot-1' })).map((m) => m.id),
    ).toEqual([a.id]);
    expect(await listAll(tenantId, { principal_id: 'nobody' })).toEqual([]);
  });

  // ── q: a literal, case-insensitive substring of the parties' ids and names (docs/API.md, "Mandates") ──

  const ids = (items: Mandate[]) => items.map((m) => m.id);

  it('when q is part of an id or a name in another case, then exactly the mandates holding it match, newest first', async () => {
    const tenantId = newId('tnt');
    const a = await seed(tenantId, {
      principal: { id: 'usr_Alice-01', name: 'Alice Martin' },
      delegate: { id: 'agent:CheckoutBot-7', name: 'Checkout bot' },
    });
    const b = await seed(tenantId, {
      principal: { id: 'usr_bob', name: 'Bob Ødegård' },
      delegate: { id: 'agent:refund-bot', name: 'Refunds' },
    });
    const c = await seed(tenantId, { principal: { id: 'org_acme' }, delegate: { id: 'svc-ledger' } });
    expect(ids(await listAll(tenantId, { q: 'checkoutbot' }))).toEqual([a.id]);
    expect(ids(await listAll(tenantId, { q: 'ALICE-0' }))).toEqual([a.id]);
    expect(ids(await listAll(tenantId, { q: 'martin' }))).toEqual([a.id]);
    expect(ids(await listAll(tenantId, { q: 'REFUNDS' }))).toEqual([b.id]);
    expect(ids(await listAll(tenantId, { q: 'ødegård' }))).toEqual([b.id]);
    expect(ids(await listAll(tenantId, { q: 'BOT' }))).toEqual([b.id, a.id]);
    expect(ids(await listAll(tenantId, { q: 'Ledger' }))).toEqual([c.id]);
    expect(ids(await listAll(tenantId, { q: 'o' }))).toEqual([c.id, b.id, a.id]);
    expect(await listAll(tenantId, { q: 'nobody' })).toEqual([]);
    // Combined with the other filters: all of them apply.
    expect(ids(await listAll(tenantId, { q: 'bot', principal_id: 'usr_bob' }))).toEqual([b.id]);
  });

  it('when q holds regular-expression characters, then they match only themselves', async () => {
    const tenantId = newId('tnt');
    const dotted = await seed(tenantId, { delegate: { id: 'a.b(c)*[d]+?^$|\\e{2}' } });
    await seed(tenantId, { delegate: { id: 'axb-cc-dd-e' } });
    await seed(tenantId, { delegate: { id: 'anything' } });
    expect(ids(await listAll(tenantId, { q: 'a.b' }))).toEqual([dotted.id]);
    expect(ids(await listAll(tenantId, { q: '(C)*[D]+?^$|\\E{2}' }))).toEqual([dotted.id]);
    expect(await listAll(tenantId, { q: '.*' })).toEqual([]);
    expect(await listAll(tenantId, { q: '^a' })).toEqual([]);
  });

  it("when q matches another tenant's mandates, then they are never listed", async () => {
    const tenantA = newId('tnt');
    const tenantB = newId('tnt');
    const mine = await seed(tenantA, { delegate: { id: 'agent-shared-name' } });
    await seed(tenantB, { delegate: { id: 'agent-shared-name' } });
    await seed(tenantB, { principal: { id: 'p', name: 'Shared Name' } });
    expect(ids(await listAll(tenantA, { q: 'shared' }))).toEqual([mine.id]);
    expect(await listAll(newId('tnt'), { q: 'shared' })).toEqual([]);
  });

  it('when q and a cursor are combined, then pages come newest first, each match once', async () => {
    const tenantId = newId('tnt');
    const matching: string[] = [];
    for (let i = 0; i < 11; i++) {
      const m = await seed(tenantId, { delegate: { id: i % 3 === 0 ? `other-${i}` : `Agent-Pay-${i}` } });
      if (i % 3 !== 0) matching.push(m.id);
    }
    const seen = await walkPages(3, (page) =>
      getStore().list(tenantId, { ...page, now: NOW, q: 'agent-pay' }),
    );
    expect(seen).toEqual([...matching].reverse());
  });

  it('when limit is n, then at most n + 1 items come back (the extra one signals more)', async () => {
    const tenantId = newId('tnt');
    for (let i = 0; i < 5; i++) await seed(tenantId);
    expect(await listAll(tenantId, { limit: 2 })).toHaveLength(3);
    expect(await listAll(tenantId, { limit: 10 })).toHaveLength(5);
  });

  it('when paging while new mandates are inserted, then no item is skipped or repeated', async () => {
    const tenantId = newId('tnt');
    const original: string[] = [];
    for (let i = 0; i < 23; i++) original.push((await seed(tenantId)).id);
    const seen: string[] = [];
    let afterId: string | undefined;
    for (;;) {
      const items = await getStore().list(tenantId, { limit: 5, afterId, now: NOW });
      const page = items.slice(0, 5);
      seen.push(...page.map((m) => m.id));
      // Concurrent inserts between pages are newer than every cursor, so they never shift later pages.
      await seed(tenantId);
      if (items.length <= 5) break;
      afterId = page[page.length - 1]!.id;
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual([...original].reverse());
  });

  it('when the expected version matches, then the transition applies; when it is stale, then nothing changes', async () => {
    const tenantId = newId('tnt');
    const mandate = await seed(tenantId);
    const updated = await getStore().transition(tenantId, mandate.id, 1, {
      state: 'SUSPENDED',
      version: 2,
      updated_at: minutes(1),
    });
    expect(updated).toEqual({ ...mandate, state: 'SUSPENDED', version: 2, updated_at: minutes(1) });
    const stale = await getStore().transition(tenantId, mandate.id, 1, {
      state: 'REVOKED',
      version: 2,
      updated_at: minutes(2),
    });
    expect(stale).toBeNull();
    expect(await getStore().get(tenantId, mandate.id)).toEqual(updated);
  });

  it('when two writers race on the same version, then exactly one wins', async () => {
    const tenantId = newId('tnt');
    const mandate = await seed(tenantId);
    const results = await Promise.all(
      [0, 1].map(() =>
        getStore().transition(tenantId, mandate.id, 1, {
          state: 'REVOKED',
          version: 2,
          updated_at: minutes(1),
        }),
      ),
    );
    expect(results.filter((r) => r !== null)).toHaveLength(1);
    expect((await getStore().get(tenantId, mandate.id))?.version).toBe(2);
  });

  it('when filtering by state, then expiry at `now` counts: expired ACTIVE/SUSPENDED are EXPIRED, REVOKED stays REVOKED', async () => {
    const tenantId = newId('tnt');
    const activeOpen = await seed(tenantId, { state: 'ACTIVE', expires_at: null });
    const activeFuture = await seed(tenantId, { state: 'ACTIVE', expires_at: minutes(10) });
    const activePast = await seed(tenantId, { state: 'ACTIVE', expires_at: minutes(-10) });
    const activeExactlyNow = await seed(tenantId, { state: 'ACTIVE', expires_at: minutes(0) });
    const suspendedFuture = await seed(tenantId, { state: 'SUSPENDED', expires_at: minutes(10) });
    const suspendedPast = await seed(tenantId, { state: 'SUSPENDED', expires_at: minutes(-10) });
    const revokedPast = await seed(tenantId, { state: 'REVOKED', expires_at: minutes(-10) });
    const sweptExpired = await seed(tenantId, { state: 'EXPIRED', expires_at: minutes(-60) });
    const ids = async (state: Mandate['state']) =>
      (await listAll(tenantId, { state })).map((m) => m.id).sort();
    expect(await ids('ACTIVE')).toEqual([activeOpen.id, activeFuture.id].sort());
    expect(await ids('SUSPENDED')).toEqual([suspendedFuture.id]);
    expect(await ids('REVOKED')).toEqual([revokedPast.id]);
    expect(await ids('EXPIRED')).toEqual(
      [activePast.id, activeExactlyNow.id, suspendedPast.id, sweptExpired.id].sort(),
    );
  });
  it('when a mandate changes state, then a state filter lists it under the new state only', async () => {
    const tenantId = newId('tnt');
    const mandate = await seed(tenantId, { state: 'ACTIVE' });
    await getStore().transition(tenantId, mandate.id, 1, {
      state: 'SUSPENDED',
      version: 2,
      updated_at: minutes(1),
    });
    const ids = async (state: Mandate['state']) => (await listAll(tenantId, { state })).map((m) => m.id);
    expect(await ids('ACTIVE')).toEqual([]);
    expect(await ids('SUSPENDED')).toEqual([mandate.id]);
    await getStore().transition(tenantId, mandate.id, 2, {
      state: 'ACTIVE',
      version: 3,
      updated_at: minutes(2),
    });
    expect(await ids('ACTIVE')).toEqual([mandate.id]);
    expect(await ids('SUSPENDED')).toEqual([]);
    expect((await listAll(tenantId, { state: 'ACTIVE' }))[0]?.version).toBe(3);
  });

  it('when state, principal and a cursor are combined, then pages come newest first, each mandate once', async () => {
    const tenantId = newId('tnt');
    const expired: string[] = [];
    for (let i = 0; i < 12; i++) {
      const overrides: Partial<Mandate>[] = [
        { state: 'ACTIVE', expires_at: minutes(-5) },
        { state: 'EXPIRED', expires_at: minutes(-60) },
        { state: 'SUSPENDED', expires_at: minutes(-1) },
        { state: 'ACTIVE', expires_at: minutes(5) },
      ];
      const m = await seed(tenantId, {
        principal: { id: i % 3 === 0 ? 'bob' : 'alice', type: 'person' },
        ...overrides[i % 4],
      });
      if (i % 4 !== 3 && i % 3 !== 0) expired.push(m.id);
    }
    const seen = await walkPages(2, (page) =>
      getStore().list(tenantId, { ...page, now: NOW, state: 'EXPIRED', principal_id: 'alice' }),
    );
    expect(seen).toEqual([...expired].reverse());
  });
  it('when order is asc, then pages come oldest first across pages, each mandate once, with and without a state filter', async () => {
    const tenantId = newId('tnt');
    const all: string[] = [];
    const expired: string[] = [];
    for (let i = 0; i < 13; i++) {
      // EXPIRED merges three stored states (swept, and ACTIVE/SUSPENDED past expiry) in id order.
      const overrides: Partial<Mandate>[] = [
        { state: 'ACTIVE', expires_at: minutes(-5) },
        { state: 'EXPIRED', expires_at: minutes(-60) },
        { state: 'SUSPENDED', expires_at: minutes(-1) },
        { state: 'ACTIVE', expires_at: minutes(5) },
      ];
      const m = await seed(tenantId, overrides[i % 4]);
      all.push(m.id);
      if (i % 4 !== 3) expired.push(m.id);
    }
    const asc = (q: Partial<Parameters<MandateStore['list']>[1]>) =>
      walkPages(4, (page) => getStore().list(tenantId, { ...page, now: NOW, order: 'asc', ...q }));
    expect(await asc({})).toEqual(all);
    expect(await asc({ state: 'EXPIRED' })).toEqual(expired);
    const desc = await walkPages(4, (page) =>
      getStore().list(tenantId, { ...page, now: NOW, order: 'desc' }),
    );
    expect(desc).toEqual([...all].reverse());
  });

  it('when paging oldest first while new mandates are inserted, then none is skipped or repeated and the new ones come last', async () => {
    const tenantId = newId('tnt');
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await seed(tenantId)).id);
    const seen: string[] = [];
    let afterId: string | undefined;
    for (let guard = 0; guard < 20; guard++) {
      const items = await getStore().list(tenantId, { limit: 3, afterId, now: NOW, order: 'asc' });
      const page = items.slice(0, 3);
      seen.push(...page.map((m) => m.id));
      if (guard < 2) ids.push((await seed(tenantId)).id);
      if (items.length <= 3) break;
      afterId = page[page.length - 1]!.id;
    }
    expect(seen).toEqual(ids);
  });

  it('when counting, then the count equals what paging through returns for every filter, expiry at `now` and a future start included', async () => {
    const tenantId = newId('tnt');
    const other = newId('tnt');
    const states: Partial<Mandate>[] = [
      { state: 'ACTIVE', expires_at: null },
      // Starts later: still ACTIVE in the store and in every state filter.
      { state: 'ACTIVE', valid_from: minutes(60), expires_at: minutes(120) },
      { state: 'ACTIVE', expires_at: minutes(-10) },
      { state: 'ACTIVE', expires_at: minutes(0) },
      { state: 'SUSPENDED', expires_at: minutes(10) },
      { state: 'SUSPENDED', expires_at: minutes(-10) },
      { state: 'REVOKED', expires_at: minutes(-10) },
      { state: 'EXPIRED', expires_at: minutes(-60) },
    ];
    for (let i = 0; i < 19; i++) {
      await seed(tenantId, {
        principal: { id: i % 2 === 0 ? 'alice' : 'bob', type: 'person' },
        delegate: { id: i % 3 === 0 ? 'Agent-Count-7' : 'other-agent' },
        ...states[i % states.length],
      });
    }
    // Another tenant's mandates are never counted.
    for (let i = 0; i < 3; i++) await seed(other, { principal: { id: 'alice', type: 'person' } });
    const filters: Omit<Parameters<MandateStore['count']>[1], 'now'>[] = [
      {},
      { state: 'ACTIVE' },
      { state: 'SUSPENDED' },
      { state: 'EXPIRED' },
      { state: 'REVOKED' },
      { principal_id: 'alice' },
      { principal_id: 'alice', state: 'EXPIRED' },
      { delegate_id: 'Agent-Count-7', state: 'ACTIVE' },
      { q: 'agent-count' },
      { q: 'agent-count', state: 'EXPIRED', principal_id: 'bob' },
      { principal_id: 'nobody' },
    ];
    const counted = [];
    const paged = [];
    for (const f of filters) {
      counted.push({ ...f, n: await getStore().count(tenantId, { ...f, now: NOW }) });
      paged.push({
        ...f,
        n: (await walkPages(4, (page) => getStore().list(tenantId, { ...page, now: NOW, ...f }))).length,
      });
    }
    expect(counted).toEqual(paged);
    expect(counted.map((c) => c.n)).toEqual([19, 6, 2, 9, 2, 10, 3, 2, 7, 2, 0]);
  });

  // ── outbox: events stored in the same write as the change, removed once the broker confirmed ──

  const eventFor = (tenantId: string, mandateId: string, type: AuditEvent['type']) =>
    anyEvent({ type, tenantId, resource: { type: 'mandate', id: mandateId }, data: { n: 1 } });
  /** The store is shared by the suite: look only at this test's events. */
  const pendingOf = async (ids: string[]) =>
    (await getStore().pendingEvents(10_000)).filter((e) => ids.includes(e.id));

  it('when a mandate is created with outbox events, then they are pending (never on a read) until marked sent', async () => {
    const tenantId = newId('tnt');
    const mandate = buildMandate({ tenant_id: tenantId });
    const created = eventFor(tenantId, mandate.id, 'MANDATE_CREATED');
    expect(await getStore().create(tenantId, mandate, [created])).toEqual(mandate);
    expect(await pendingOf([created.id])).toEqual([created]);
    expect(Object.keys((await getStore().get(tenantId, mandate.id))!)).not.toContain('outbox');
    expect(JSON.stringify(await listAll(tenantId))).not.toContain(created.id);
    await getStore().markSent([created.id]);
    expect(await pendingOf([created.id])).toEqual([]);
  });

  it('when a transition carries events, then they join the outbox in order; a lost race stores neither the change nor its events', async () => {
    const tenantId = newId('tnt');
    const mandate = buildMandate({ tenant_id: tenantId });
    const created = eventFor(tenantId, mandate.id, 'MANDATE_CREATED');
    await getStore().create(tenantId, mandate, [created]);
    const suspended = eventFor(tenantId, mandate.id, 'MANDATE_SUSPENDED');
    const patch = { state: 'SUSPENDED' as const, version: 2, updated_at: minutes(1) };
    expect(await getStore().transition(tenantId, mandate.id, 1, patch, [suspended])).toMatchObject({
      version: 2,
    });
    const stale = eventFor(tenantId, mandate.id, 'MANDATE_REVOKED');
    expect(
      await getStore().transition(tenantId, mandate.id, 1, { ...patch, state: 'REVOKED' }, [stale]),
    ).toBeNull();
    expect(await pendingOf([created.id, suspended.id, stale.id])).toEqual([created, suspended]);
    // Marking some sent leaves the others pending.
    await getStore().markSent([created.id]);
    expect(await pendingOf([created.id, suspended.id])).toEqual([suspended]);
    await getStore().markSent([suspended.id, 'evt_unknown']);
    expect(await pendingOf([suspended.id])).toEqual([]);
  });

  it("when many mandates hold events, then pendingEvents respects the limit and returns each mandate's events whole", async () => {
    const tenantId = newId('tnt');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const m = buildMandate({ tenant_id: tenantId });
      const events = [
        eventFor(tenantId, m.id, 'MANDATE_CREATED'),
        eventFor(tenantId, m.id, 'MANDATE_SUSPENDED'),
      ];
      await getStore().create(tenantId, m, events);
      ids.push(...events.map((e) => e.id));
    }
    const page = await getStore().pendingEvents(3);
    expect(page.length).toBeGreaterThan(0);
    expect(page.length).toBeLessThanOrEqual(3);
    await getStore().markSent(ids);
    expect(await pendingOf(ids)).toEqual([]);
  });
});
