import { MONGO_TARGET } from '@mandate/shared/testing';
import { mongoStackEnv, type MongoStackEnv } from '../support/mongo-standin';
import { apiClient, createTenant, startStack, type ServiceProcess, type Stack } from '../support/stack';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';
import { restart, sigkill, waitFor, withPort } from './producers';

/**
 * docs/API.md "Budgets", "Never over budget": a retried hold with the same Idempotency-Key, after
 * a crash at any point, gets the first hold back and is counted once. The mandates process (which
 * owns authorizations, on its Mongo adapter) is killed with SIGKILL between accepting a hold and
 * answering it, at each of its writes (docs/DECISIONS.md "Budgets: one conditional write"), and
 * mid-stream of holds and captures; it reaches MongoDB through a TCP proxy whose tap sees each
 * command, so the kill lands exactly before the write named.
 */
const BUDGET = { amount: 10_000_000, period: 'month', timezone: 'Europe/Berlin' };

describe(`budgets: the mandates process killed with SIGKILL while it holds (five processes, ${MONGO_TARGET})`, () => {
  let databases: MongoStackEnv;
  let proxy: TcpProxy;
  let stack: Stack;
  let api: ReturnType<typeof apiClient>;
  let auth: string;
  /** The command (a MongoDB wire message) at which the next kill lands; armed by a test. */
  let killAt: ((chunk: Buffer) => boolean) | undefined;
  let tripped = false;
  const alive: ServiceProcess[] = [];
  const mandates = () => alive[alive.length - 1]!;

  beforeAll(async () => {
    databases = mongoStackEnv('budgetcrash');
    const mongo = new URL(databases.env.mandates.MONGO_URL!);
    proxy = await startTcpProxy(mongo.hostname, Number(mongo.port || 27017), {
      tap: (_connection, chunk) => {
        if (!killAt?.(chunk)) return;
        killAt = undefined;
        tripped = true;
        // This very chunk is kept in the proxy: the write never reaches MongoDB.
        proxy.holdToTarget();
      },
    });
    stack = await startStack(
      {
        mandates: { ...databases.env.mandates, MONGO_URL: withPort(mongo.toString(), proxy.port) },
        identity: databases.env.identity,
        audit: databases.env.audit,
      },
      {},
    );
    alive.push(stack.services.mandates);
    api = apiClient(stack.gateway.url);
    auth = (await createTenant(stack, { name: 'Crash', plan: 'enterprise' })).auth;
  }, 240_000);

  afterAll(async () => {
    await stack?.stop();
    for (const p of alive.slice(1)) await p.stop();
    await proxy?.close();
    await databases?.drop();
  }, 60_000);

  async function budgetedMandate(): Promise<string> {
    const created = await api('POST', '/v1/mandates', {
      auth,
      body: {
        principal: 'user_alice',
        delegate: { id: 'agent_42', type: 'agent' },
        scope: { actions: ['payments:*'], constraints: { currency: 'EUR' }, budget: BUDGET },
      },
    });
    expect(created.status).toBe(201);
    return created.body.id;
  }

  /** A POST sent until it is answered below 500 (network errors included), with one Idempotency-Key. */
  async function untilAnswered(path: string, key: string, body: unknown, deadlineMs = 200_000) {
    const deadline = Date.now() + deadlineMs;
    for (let attempt = 0; ; attempt++) {
      const res = await api('POST', path, { auth, headers: { 'idempotency-key': key }, body }).catch(
        () => null,
      );
      if (res && res.status < 500) return { ...res, attempts: attempt + 1 };
      if (Date.now() > deadline) throw new Error(`${path} (${key}) unanswered: ${res?.status} ${res?.text}`);
      await new Promise((r) => setTimeout(r, 300));
    }
  }

  /** Every authorization of the mandate (all pages). */
  async function listAll(
    mandateId: string,
  ): Promise<{ id: string; status: string; amount: number; captured_amount: number }[]> {
    const all = [];
    let cursor: string | null = null;
    do {
      const page = await api(
        'GET',
        `/v1/mandates/${mandateId}/authorizations?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        { auth },
      );
      expect(page.status).toBe(200);
      all.push(...page.body.data);
      cursor = page.body.next_cursor;
    } while (cursor);
    return all;
  }

  /** The budget read agrees with the authorizations: held and captured are their sums. */
  async function expectBudgetAgrees(mandateId: string) {
    const listed = await listAll(mandateId);
    const budget = (await api('GET', `/v1/mandates/${mandateId}/budget`, { auth })).body;
    const sum = (status: string, of: (a: (typeof listed)[number]) => number) =>
      listed.filter((a) => a.status === status).reduce((s, a) => s + of(a), 0);
    expect({ held: budget.held, captured: budget.captured }).toEqual({
      held: sum('HELD', (a) => a.amount),
      captured: sum('CAPTURED', (a) => a.captured_amount),
    });
    expect(budget.available).toBe(BUDGET.amount - budget.held - budget.captured);
    return { listed, budget };
  }

  /** Kills mandates once `killAt` has tripped, drops the write held in the proxy, and starts it again. */
  async function killAndRestart() {
    await waitFor(() => tripped, 'the armed MongoDB command', 60_000);
    tripped = false;
    await sigkill(mandates());
    proxy.cut();
    proxy.restore();
    proxy.releaseToTarget();
    alive.push(await restart('mandates', mandates()));
  }

  const isCommand = (chunk: Buffer, ...parts: string[]) => parts.every((p) => chunk.includes(p));

  it.each([
    {
      at: 'before the period write (the PENDING authorization inserted, nothing counted yet)',
      match: (c: Buffer) => isCommand(c, 'findAndModify', 'budget_periods'),
    },
    {
      at: 'after the period write (counted, the authorization still PENDING, no answer sent)',
      match: (c: Buffer) => isCommand(c, 'findAndModify', 'authorizations', 'PENDING'),
    },
  ])(
    'when mandates is killed $at and the hold is retried with its Idempotency-Key, then it is counted exactly once',
    async ({ match }) => {
      const mandateId = await budgetedMandate();
      const path = `/v1/mandates/${mandateId}/authorizations`;
      const body = { action: 'payments:create', amount: 12_000, currency: 'EUR' };
      killAt = match;
      const first = api('POST', path, { auth, headers: { 'idempotency-key': `crash-${mandateId}` }, body });
      await killAndRestart();
      const lost = await first;
      // The client never got an answer: the gateway could not reach the killed process.
      expect(lost.status).toBeGreaterThanOrEqual(500);

      const retried = await untilAnswered(path, `crash-${mandateId}`, body);
      expect(retried.status).toBe(201);
      expect(retried.body).toMatchObject({ decision: 'ALLOW', budget: { held: 12_000, captured: 0 } });
      const again = await untilAnswered(path, `crash-${mandateId}`, body);
      expect(again.body.authorization.id).toBe(retried.body.authorization.id);

      const { listed } = await expectBudgetAgrees(mandateId);
      expect(listed.map((a) => [a.id, a.status, a.amount])).toEqual([
        [retried.body.authorization.id, 'HELD', 12_000],
      ]);
      const captured = await untilAnswered(
        `/v1/authorizations/${retried.body.authorization.id}/capture`,
        `cap-${mandateId}`,
        {
          amount: 10_000,
        },
      );
      expect(captured.body).toMatchObject({ status: 'CAPTURED', captured_amount: 10_000 });
      const { budget } = await expectBudgetAgrees(mandateId);
      expect(budget).toMatchObject({ held: 0, captured: 10_000 });
    },
    240_000,
  );

  it('when mandates is killed mid-stream of holds and captures and restarted, then no hold is lost or counted twice and the budget agrees with the authorizations', async () => {
    const mandateId = await budgetedMandate();
    const COUNT = 40;
    const amountOf = (i: number) => 1_000 + i * 37;
    const results: { i: number; id: string; captured: number; attempts: number }[] = [];
    const captures: [number, string][] = [];
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < COUNT; i = next++) {
        const held = await untilAnswered(`/v1/mandates/${mandateId}/authorizations`, `s-${mandateId}-${i}`, {
          action: 'payments:create',
          amount: amountOf(i),
          currency: 'EUR',
        });
        expect([held.status, held.body.decision, held.body.reason]).toEqual([201, 'ALLOW', 'OK']);
        const id: string = held.body.authorization.id;
        // Even ones captured (80 %), odd ones left HELD.
        let captured = 0;
        if (i % 2 === 0) {
          const cap = await untilAnswered(`/v1/authorizations/${id}/capture`, `c-${mandateId}-${i}`, {
            amount: Math.floor(amountOf(i) * 0.8),
          });
          captures.push([cap.status, cap.body.status]);
          captured = cap.body.captured_amount;
        }
        results.push({ i, id, captured, attempts: held.attempts });
      }
    };
    const load = Promise.all(Array.from({ length: 6 }, worker));
    await waitFor(() => results.length >= 10, 'the first 10 holds');
    const doneAtKill = results.length;
    await sigkill(mandates());
    alive.push(await restart('mandates', mandates()));
    await load;

    expect(captures).toEqual(Array.from({ length: COUNT / 2 }, () => [200, 'CAPTURED']));
    expect(doneAtKill).toBeLessThan(COUNT);
    expect(results.length).toBe(COUNT);
    // The kill hit requests on their way: some were answered only on a retry.
    expect(results.some((r) => r.attempts > 1)).toBe(true);
    expect(new Set(results.map((r) => r.id)).size).toBe(COUNT);
    const { listed, budget } = await expectBudgetAgrees(mandateId);
    expect(listed.map((a) => a.id).sort()).toEqual(results.map((r) => r.id).sort());
    expect(budget).toMatchObject({
      held: results.filter((r) => r.i % 2 === 1).reduce((s, r) => s + amountOf(r.i), 0),
      captured: results.reduce((s, r) => s + r.captured, 0),
    });
  }, 330_000);
});
