import { MONGO_TARGET } from '@mandate/shared/testing';
import { mongoStackEnv, type MongoStackEnv } from '../support/mongo-standin';
import { apiClient, createTenant, startStack, verifyCounters, type Stack } from '../support/stack';

/**
 * docs/API.md "Budgets", "Never over budget": 200 holds sent at once against one budget through the
 * gateway, on the processes `npm run start:services` starts (two verify replicas), once on the
 * in-memory stores and once with mandates on its MongoDB adapter (the stand-in unless MONGO_URL is
 * given). Verifies with an amount go through both verify replicas meanwhile.
 */
const HOLDS = 200;
// 200 holds of 50.00–149.99 EUR ask for about 20,000.00; the budget takes about half of them.
const BUDGET = 1_000_000;
const amountOf = (i: number) => 5_000 + ((i * 7_919) % 10_000);

describe.each([
  { stores: 'in-memory stores', mongo: false },
  { stores: `mandates on its Mongo adapter on ${MONGO_TARGET}`, mongo: true },
])('budgets: 200 concurrent holds through the gateway, $stores', ({ mongo }) => {
  let stack: Stack;
  let api: ReturnType<typeof apiClient>;
  let databases: MongoStackEnv | undefined;

  beforeAll(async () => {
    databases = mongo ? mongoStackEnv('budgets') : undefined;
    stack = await startStack(databases?.env ?? {}, { replicas: { verify: 2 } });
    api = apiClient(stack.gateway.url);
  }, 180_000);

  afterAll(async () => {
    await stack?.stop();
    await databases?.drop();
  }, 60_000);

  /** A hold retried with its Idempotency-Key while the answer is a 5xx (an upstream timeout on a slow machine). */
  async function hold(auth: string, mandateId: string, i: number) {
    const deadline = Date.now() + 200_000;
    for (let attempt = 0; ; attempt++) {
      const res = await api('POST', `/v1/mandates/${mandateId}/authorizations`, {
        auth,
        headers: { 'idempotency-key': `hold-${i}` },
        body: { action: 'payments:create', amount: amountOf(i), currency: 'EUR' },
      });
      if (res.status < 500 || Date.now() > deadline) return { i, amount: amountOf(i), ...res };
      await new Promise((r) => setTimeout(r, 200 * Math.min(attempt + 1, 5)));
    }
  }

  /**
   * A verify with an amount, retried on 503 until a minute after the holds are answered: under the burst verify's
   * read of the available budget waits behind 200 holds in mandates (minutes on the stand-in), and
   * past its bound (2 s) the answer is "retry later".
   */
  let holdsAnsweredAt: number | undefined;
  async function verify(auth: string, mandateId: string, amount: number) {
    for (;;) {
      const res = await api('POST', '/v1/verify', {
        auth,
        body: { mandate_id: mandateId, action: 'payments:create', amount, currency: 'EUR' },
      });
      // Until a minute after the holds were answered: mandates still finishes the ones the gateway
      // gave up on (retried with their key), and verify's reads queue behind them.
      if (res.status !== 503 || (holdsAnsweredAt !== undefined && Date.now() > holdsAnsweredAt + 60_000))
        return res;
      expect(res.body).toEqual({ error: 'SERVICE_UNAVAILABLE', message: expect.any(String) });
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  it('when 200 holds race for one budget, then it is never over-committed, filled to within one request, and the rest are refused with BUDGET_EXCEEDED', async () => {
    const tenant = await createTenant(stack, { name: 'Budgeted', plan: 'enterprise' });
    const created = await api('POST', '/v1/mandates', {
      auth: tenant.auth,
      body: {
        principal: 'user_alice',
        delegate: { id: 'agent_42', type: 'agent' },
        scope: {
          actions: ['payments:*'],
          constraints: { currency: 'EUR' },
          budget: { amount: BUDGET, period: 'month', timezone: 'Europe/Berlin' },
        },
      },
    });
    expect(created.status).toBe(201);
    const mandateId: string = created.body.id;
    const before = await Promise.all(
      stack.replicas.verify.map((r) => verifyCounters(stack.internalSecret, r.url, 'before')),
    );

    const verifies = Array.from({ length: 20 }, () => verify(tenant.auth, mandateId, 5_000));
    const answers = await Promise.all(
      Array.from({ length: HOLDS }, (_, i) => hold(tenant.auth, mandateId, i)),
    );
    holdsAnsweredAt = Date.now();

    const accepted = answers.filter((a) => a.status === 201);
    const refused = answers.filter((a) => a.status !== 201);
    for (const a of accepted)
      expect(a.body).toMatchObject({ decision: 'ALLOW', authorization: { status: 'HELD' } });
    for (const r of refused) {
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ decision: 'DENY', reason: 'BUDGET_EXCEEDED', mandate_id: mandateId });
      // Nothing was held for it: what it saw left did not take its amount.
      expect(r.body.budget.available).toBeLessThan(r.amount);
    }
    // Every answer saw a budget within its amount.
    for (const a of answers) expect(a.body.budget.held + a.body.budget.captured).toBeLessThanOrEqual(BUDGET);
    const sum = accepted.reduce((s, a) => s + a.amount, 0);
    expect(sum).toBeLessThanOrEqual(BUDGET);
    expect(refused.length).toBeGreaterThan(0);
    // Holds only add up here, so whatever a refusal saw left only shrank: what is left now takes
    // none of the refused amounts (filled to within one request).
    expect(BUDGET - sum).toBeLessThan(Math.min(...refused.map((r) => r.amount)));
    expect(new Set(accepted.map((a) => a.body.authorization.id)).size).toBe(accepted.length);

    const budget = await api('GET', `/v1/mandates/${mandateId}/budget`, { auth: tenant.auth });
    expect(budget.body).toMatchObject({ amount: BUDGET, held: sum, captured: 0, available: BUDGET - sum });
    const listed = await api('GET', `/v1/mandates/${mandateId}/authorizations?limit=100&status=HELD`, {
      auth: tenant.auth,
    });
    expect(listed.status).toBe(200);
    let count = listed.body.data.length;
    let cursor = listed.body.next_cursor;
    while (cursor) {
      const page = await api(
        'GET',
        `/v1/mandates/${mandateId}/authorizations?limit=100&status=HELD&cursor=${encodeURIComponent(cursor)}`,
        { auth: tenant.auth },
      );
      count += page.body.data.length;
      cursor = page.body.next_cursor;
    }
    expect(count).toBe(accepted.length);

    // The verifies sent during the burst, once the holds are checked.
    for (const v of await Promise.all(verifies)) {
      expect([v.status, v.text]).toEqual([200, expect.stringContaining('"decision"')]);
      expect(['OK', 'BUDGET_EXCEEDED']).toContain(v.body.reason);
    }
    // Verify (read-only, both replicas) now refuses what no longer fits and holds nothing.
    const smallest = Math.min(...refused.map((r) => r.amount));
    const late = await Promise.all(Array.from({ length: 4 }, () => verify(tenant.auth, mandateId, smallest)));
    for (const v of late) expect(v.body).toMatchObject({ decision: 'DENY', reason: 'BUDGET_EXCEEDED' });
    const after = await Promise.all(
      stack.replicas.verify.map((r) => verifyCounters(stack.internalSecret, r.url, 'after')),
    );
    const served = after.map((c, k) => c.verifications! - before[k]!.verifications!);
    for (const n of served) expect(n).toBeGreaterThan(0);
    expect((await api('GET', `/v1/mandates/${mandateId}/budget`, { auth: tenant.auth })).body.held).toBe(sum);
  }, 420_000);
});
