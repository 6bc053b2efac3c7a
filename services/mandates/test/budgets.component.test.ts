import { compactVerify, createLocalJWKSet } from 'jose';
import { fixedClock, newId } from '@mandate/shared/core';
import { callService, callerFor } from '@mandate/shared/testing';
import { AuthorizationSweeper } from '../src/sweeper/authorization-sweeper';
import { mandateStoreAdapters, mandatesForSuite } from './support';

// A Thursday in March 2031, Berlin in CET: the month runs 1 March 00:00 CET to 1 April 00:00 CEST.
const START = '2031-03-20T10:00:00.000Z';
const MARCH = { start: '2031-02-28T23:00:00.000Z', end: '2031-03-31T22:00:00.000Z' };
const budget = { amount: 50_000, period: 'month', timezone: 'Europe/Berlin' };
const scope = { actions: ['payments:*'], constraints: { currency: 'EUR' }, budget };

describe.each(mandateStoreAdapters())('budgets and authorizations (in-process, $name store)', (adapter) => {
  const clock = fixedClock(START);
  const svc = mandatesForSuite({ clock }, adapter);
  const { call } = svc;
  const createMandate = async (tenantId: string, overrides: Record<string, unknown> = {}) => {
    const res = await call(tenantId, 'POST', '/v1/mandates', {
      principal: 'alice',
      delegate: 'agent-7',
      scope,
      ...overrides,
    });
    expect(res.status).toBe(201);
    return res.body as { id: string; scope: Record<string, unknown>; signature: { jws: string } };
  };
  const hold = (
    tenantId: string,
    mandateId: string,
    body: Record<string, unknown> = {},
    headers?: Record<string, string>,
  ) =>
    callService(svc.url, 'POST', `/v1/mandates/${mandateId}/authorizations`, {
      caller: callerFor(tenantId),
      body: { action: 'payments:create', amount: 12_000, currency: 'EUR', ...body },
      headers,
    });
  beforeEach(() => clock.set(START));

  describe('the budget in the scope', () => {
    it('when a mandate has a budget, then it is served with its default timezone and signed with the scope', async () => {
      const tenantId = newId('tnt');
      const mandate = await createMandate(tenantId, {
        scope: { ...scope, budget: { amount: 200_000, period: 'week' } },
      });
      expect(mandate.scope.budget).toEqual({ amount: 200_000, period: 'week', timezone: 'UTC' });
      const jwks = (await call(tenantId, 'GET', '/v1/.well-known/jwks.json')).body;
      const { payload } = await compactVerify(mandate.signature.jws, createLocalJWKSet(jwks));
      expect(JSON.parse(new TextDecoder().decode(payload)).scope.budget).toEqual({
        amount: 200_000,
        period: 'week',
        timezone: 'UTC',
      });
    });

    it.each([
      [{ ...scope, constraints: undefined }, 'scope.budget: budget requires constraints.currency'],
      [{ ...scope, budget: { ...budget, timezone: 'Mars/Olympus' } }, 'scope.budget.timezone'],
      [{ ...scope, budget: { ...budget, amount: 0 } }, 'scope.budget.amount'],
      [{ ...scope, budget: { ...budget, period: 'year' } }, 'scope.budget.period'],
      [{ ...scope, budget: { ...budget, extra: 1 } }, 'scope.budget'],
    ])('when the budget is invalid (%j), then 400 names %s and nothing is created', async (bad, field) => {
      const tenantId = newId('tnt');
      const res = await call(tenantId, 'POST', '/v1/mandates', { principal: 'a', delegate: 'b', scope: bad });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('BAD_REQUEST');
      expect(res.body.message).toContain(field);
      expect((await call(tenantId, 'GET', '/v1/mandates')).body.data).toEqual([]);
    });
  });

  it('when 120.00 is held and 100.00 captured, then the rest is released and the budget shows each step', async () => {
    const tenantId = newId('tnt');
    const mandate = await createMandate(tenantId);
    const held = await hold(tenantId, mandate.id);
    expect(held.status).toBe(201);
    expect(held.body).toMatchObject({
      decision: 'ALLOW',
      reason: 'OK',
      mandate_id: mandate.id,
      mandate_version: 1,
      authorization: {
        mandate_id: mandate.id,
        action: 'payments:create',
        resource: null,
        amount: 12_000,
        currency: 'EUR',
        status: 'HELD',
        captured_amount: 0,
        period_start: MARCH.start,
        expires_at: '2031-03-20T10:15:00.000Z',
      },
      budget: {
        amount: 50_000,
        currency: 'EUR',
        period: 'month',
        timezone: 'Europe/Berlin',
        period_start: MARCH.start,
        period_end: MARCH.end,
        captured: 0,
        held: 12_000,
        available: 38_000,
      },
    });
    const id = held.body.authorization.id as string;
    expect(id).toMatch(/^sau_/);

    const captured = await call(tenantId, 'POST', `/v1/authorizations/${id}/capture`, { amount: 10_000 });
    expect(captured).toMatchObject({
      status: 200,
      body: { id, status: 'CAPTURED', captured_amount: 10_000 },
    });
    const after = await call(tenantId, 'GET', `/v1/mandates/${mandate.id}/budget`);
    expect(after.body).toEqual({
      amount: 50_000,
      currency: 'EUR',
      period: 'month',
      timezone: 'Europe/Berlin',
      period_start: MARCH.start,
      period_end: MARCH.end,
      captured: 10_000,
      held: 0,
      available: 40_000,
    });

    const events = svc.publisher.ofResource(mandate.id).filter((e) => e.type.startsWith('AUTHORIZATION_'));
    expect(events.map((e) => [e.type, e.data.budget as { held: number; captured: number }])).toEqual([
      ['AUTHORIZATION_HELD', expect.objectContaining({ held: 12_000, captured: 0, available: 38_000 })],
      ['AUTHORIZATION_CAPTURED', expect.objectContaining({ held: 0, captured: 10_000, available: 40_000 })],
    ]);
    expect(events[1]!.data.authorization).toEqual(captured.body);

    // Captured once: a second capture or a void names the state.
    for (const op of ['capture', 'void'])
      expect(await call(tenantId, 'POST', `/v1/authorizations/${id}/${op}`)).toMatchObject({
        status: 409,
        body: { error: 'CONFLICT', message: expect.stringContaining('CAPTURED') },
      });
    // A retry with an Idempotency-Key (its first answer lost to a crash) gets the first answer
    // when it asks what was done; a void, or another amount, still names the state.
    const retry = (op: string, body?: unknown) =>
      callService(svc.url, 'POST', `/v1/authorizations/${id}/${op}`, {
        caller: callerFor(tenantId),
        body,
        headers: { 'idempotency-key': 'retried' },
      });
    expect(await retry('capture', { amount: 10_000 })).toMatchObject({ status: 200, body: captured.body });
    expect((await retry('capture', { amount: 9_000 })).status).toBe(409);
    expect((await retry('void')).status).toBe(409);
    expect(
      svc.publisher.ofResource(mandate.id).filter((e) => e.type.startsWith('AUTHORIZATION_')),
    ).toHaveLength(2);
  });

  it('when a hold does not fit what is left, then DENY BUDGET_EXCEEDED and nothing is held', async () => {
    const tenantId = newId('tnt');
    const mandate = await createMandate(tenantId);
    expect((await hold(tenantId, mandate.id, { amount: 45_000 })).status).toBe(201);
    const denied = await hold(tenantId, mandate.id, { amount: 5_001 });
    expect(denied).toMatchObject({
      status: 200,
      body: { decision: 'DENY', reason: 'BUDGET_EXCEEDED', budget: { held: 45_000, available: 5_000 } },
    });
    expect(denied.body.authorization).toBeUndefined();
    expect((await hold(tenantId, mandate.id, { amount: 5_000 })).status).toBe(201);
    const list = await call(tenantId, 'GET', `/v1/mandates/${mandate.id}/authorizations`);
    expect(list.body.data).toHaveLength(2);
  });

  it('when a verify check fails, then the hold is denied with verify’s reason in verify’s order', async () => {
    const tenantId = newId('tnt');
    const mandate = await createMandate(tenantId);
    expect((await hold(tenantId, mandate.id, { action: 'refunds:create' })).body.reason).toBe(
      'ACTION_NOT_PERMITTED',
    );
    expect((await hold(tenantId, mandate.id, { currency: 'USD' })).body.reason).toBe('CURRENCY_MISMATCH');
    expect((await hold(tenantId, mandate.id, { delegate_id: 'someone' })).body.reason).toBe(
      'DELEGATE_MISMATCH',
    );
    expect((await call(tenantId, 'GET', `/v1/mandates/${mandate.id}/budget`)).body.held).toBe(0);
  });

  it('when the request is invalid, then 400 names the field', async () => {
    const tenantId = newId('tnt');
    const mandate = await createMandate(tenantId);
    for (const [body, field] of [
      [{ amount: 0 }, 'amount'],
      [{ amount: 1.5 }, 'amount'],
      [{ hold_seconds: 59 }, 'hold_seconds'],
      [{ hold_seconds: 604_801 }, 'hold_seconds'],
      [{ currency: 'eur' }, 'currency'],
      [{ unknown: 1 }, 'unknown'],
    ] as const) {
      const res = await hold(tenantId, mandate.id, body);
      expect([res.status, res.body.message]).toEqual([400, expect.stringContaining(field)]);
    }
    const held = await hold(tenantId, mandate.id, { amount: 100 });
    const over = await call(tenantId, 'POST', `/v1/authorizations/${held.body.authorization.id}/capture`, {
      amount: 101,
    });
    expect([over.status, over.body.message]).toEqual([
      400,
      expect.stringContaining('at most the held amount'),
    ]);
  });

  it('when the same Idempotency-Key is retried by the same caller, then the first hold is answered and counted once', async () => {
    const tenantId = newId('tnt');
    const mandate = await createMandate(tenantId);
    const first = await hold(tenantId, mandate.id, {}, { 'idempotency-key': 'k-1' });
    const again = await hold(tenantId, mandate.id, {}, { 'idempotency-key': 'k-1' });
    expect(again.body.authorization).toEqual(first.body.authorization);
    expect((await call(tenantId, 'GET', `/v1/mandates/${mandate.id}/budget`)).body.held).toBe(12_000);
  });

  it('when another tenant asks, then every authorization route answers 404', async () => {
    const tenantId = newId('tnt');
    const other = newId('tnt');
    const mandate = await createMandate(tenantId);
    const id = (await hold(tenantId, mandate.id)).body.authorization.id;
    for (const [method, path] of [
      ['POST', `/v1/mandates/${mandate.id}/authorizations`],
      ['GET', `/v1/mandates/${mandate.id}/authorizations`],
      ['GET', `/v1/mandates/${mandate.id}/budget`],
      ['GET', `/v1/authorizations/${id}`],
      ['POST', `/v1/authorizations/${id}/capture`],
      ['POST', `/v1/authorizations/${id}/void`],
    ] as [string, string][]) {
      const body =
        method === 'POST' && path.endsWith('authorizations')
          ? { action: 'payments:create', amount: 1, currency: 'EUR' }
          : undefined;
      expect([path, (await call(other, method, path, body)).status]).toEqual([path, 404]);
    }
    expect((await call(tenantId, 'GET', `/v1/authorizations/${id}`)).body.status).toBe('HELD');
  });

  it('when a mandate is revoked, then its holds are voided (reason mandate_revoked); captured ones stay', async () => {
    const tenantId = newId('tnt');
    const mandate = await createMandate(tenantId);
    const a = (await hold(tenantId, mandate.id)).body.authorization.id;
    const b = (await hold(tenantId, mandate.id)).body.authorization.id;
    await call(tenantId, 'POST', `/v1/authorizations/${b}/capture`);
    expect((await call(tenantId, 'POST', `/v1/mandates/${mandate.id}/revoke`)).status).toBe(200);
    expect((await call(tenantId, 'GET', `/v1/authorizations/${a}`)).body.status).toBe('VOIDED');
    expect((await call(tenantId, 'GET', `/v1/authorizations/${b}`)).body.status).toBe('CAPTURED');
    expect((await call(tenantId, 'GET', `/v1/mandates/${mandate.id}/budget`)).body).toMatchObject({
      held: 0,
      captured: 12_000,
    });
    const voided = svc.publisher.ofResource(mandate.id).filter((e) => e.type === 'AUTHORIZATION_VOIDED');
    expect(voided.map((e) => [(e.data.authorization as { id: string }).id, e.data.reason])).toEqual([
      [a, 'mandate_revoked'],
    ]);
    expect((await hold(tenantId, mandate.id)).body).toMatchObject({
      decision: 'DENY',
      reason: 'MANDATE_REVOKED',
    });
  });

  it('when a hold passes expires_at, then reads say EXPIRED at once and the sweeper releases it, emitting AUTHORIZATION_EXPIRED once', async () => {
    const tenantId = newId('tnt');
    const mandate = await createMandate(tenantId);
    const id = (await hold(tenantId, mandate.id, { amount: 30_000, hold_seconds: 60 })).body.authorization.id;
    clock.advance(60_000);
    expect((await call(tenantId, 'GET', `/v1/authorizations/${id}`)).body.status).toBe('EXPIRED');
    expect(await call(tenantId, 'POST', `/v1/authorizations/${id}/capture`)).toMatchObject({
      status: 409,
      body: { message: expect.stringContaining('EXPIRED') },
    });
    const sweepers = [0, 1].map(() => new AuthorizationSweeper(svc.deps, { intervalMs: 60_000 }));
    const counts = await Promise.all(sweepers.map((s) => s.sweepOnce()));
    expect(counts.reduce((x, y) => x + y, 0)).toBeGreaterThanOrEqual(1);
    const expired = svc.publisher.ofResource(mandate.id).filter((e) => e.type === 'AUTHORIZATION_EXPIRED');
    expect(expired).toHaveLength(1);
    expect(expired[0]!.data.budget).toMatchObject({ held: 0, available: 50_000 });
    expect((await call(tenantId, 'GET', `/v1/mandates/${mandate.id}/budget`)).body.held).toBe(0);
  });

  it('when a refused hold finds expired holds of the mandate, then it releases them and decides again', async () => {
    const tenantId = newId('tnt');
    const mandate = await createMandate(tenantId);
    await hold(tenantId, mandate.id, { amount: 50_000, hold_seconds: 60 });
    clock.advance(61_000);
    expect((await hold(tenantId, mandate.id, { amount: 50_000 })).status).toBe(201);
  });

  it('when a hold is taken at 23:59:59 and another at 00:00:00 on 1 April (Berlin), then they count in different months', async () => {
    const tenantId = newId('tnt');
    const mandate = await createMandate(tenantId);
    clock.set('2031-03-31T21:59:59.000Z');
    const last = await hold(tenantId, mandate.id, { amount: 50_000 });
    clock.set('2031-03-31T22:00:00.000Z');
    const next = await hold(tenantId, mandate.id, { amount: 50_000 });
    expect([last.status, next.status]).toEqual([201, 201]);
    expect(last.body.authorization.period_start).toBe(MARCH.start);
    expect(next.body.budget).toMatchObject({
      period_start: '2031-03-31T22:00:00.000Z',
      period_end: '2031-04-30T22:00:00.000Z',
      held: 50_000,
    });
  });

  it('when a mandate has no budget, then holds are recorded with budget null and GET budget is 404', async () => {
    const tenantId = newId('tnt');
    const mandate = await createMandate(tenantId, { scope: { actions: ['*'] } });
    const held = await hold(tenantId, mandate.id);
    expect(held).toMatchObject({ status: 201, body: { decision: 'ALLOW', budget: null } });
    expect((await call(tenantId, 'GET', `/v1/mandates/${mandate.id}/budget`)).status).toBe(404);
  });
});
