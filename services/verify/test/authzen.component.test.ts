import fc from 'fast-check';
import { fixedClock, newId } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { type AuditEvent } from '@mandate/shared/events';
import { type RunningServer } from '@mandate/shared/http';
import { CapturingPublisher, callService, callerFor, testTokens } from '@mandate/shared/testing';
import { createApp, type VerifyApp } from '../src/app';
import { DENY_REASONS } from '../src/contract';
import type { Mandate } from '../src/domain/mandate';
import type { MandateReader, ReadContext } from '../src/mandates/mandate-reader';
import { MemoryMandateReader } from '../src/mandates/memory-mandate-reader';
import { buildMandate, NOW } from './factories';

const logger = createLogger('verify-authzen-test', 'silent');

/** The memory reader, counting reads per mandate id and able to hold a read until released. */
class ObservedReader implements MandateReader {
  readonly inner = new MemoryMandateReader();
  reads = new Map<string, number>();
  /** Called after each read resolved from the store, before it is answered. */
  afterRead?: (id: string) => Promise<void> | void;

  async get(ctx: ReadContext, id: string): Promise<Mandate | null> {
    this.reads.set(id, (this.reads.get(id) ?? 0) + 1);
    const found = await this.inner.get(ctx, id);
    await this.afterRead?.(id);
    return found;
  }
  /** What each budgeted mandate has left (docs/API.md#budgets): 50 minor units. */
  async budgetAvailable(): Promise<number> {
    return 50;
  }
  check = async () => 'ok';
  close = async () => undefined;
}

/** Keeps the events and, per tenant, how many publish calls carried its events. */
class CountingCapture extends CapturingPublisher {
  private readonly calls = new Map<string, number>();
  override async publish(events: AuditEvent[]): Promise<void> {
    for (const tenant of new Set(events.map((e) => e.tenant_id ?? '')))
      this.calls.set(tenant, (this.calls.get(tenant) ?? 0) + 1);
    return super.publish(events);
  }
  callsFor(tenantId: string): number {
    return this.calls.get(tenantId) ?? 0;
  }
}

describe('AuthZEN on verify (POST /v1/access/v1/evaluation, /evaluations, the metadata)', () => {
  const reader = new ObservedReader();
  const publisher = new CountingCapture();
  const clock = fixedClock(NOW);
  let verify: VerifyApp;
  let server: RunningServer;

  beforeAll(async () => {
    verify = createApp({
      reader,
      publisher,
      tokens: testTokens,
      logger,
      clock,
      publicBaseUrl: 'https://pdp.example.com/',
    });
    server = await verify.start();
  });
  afterAll(async () => {
    await verify.stop();
  });
  beforeEach(() => {
    reader.afterRead = undefined;
  });

  function given(tenantId: string, overrides: Parameters<typeof buildMandate>[0] = {}): Mandate {
    const mandate = buildMandate({ tenant_id: tenantId, ...overrides });
    reader.inner.put(mandate);
    return mandate;
  }

  const post = (tenantId: string, path: string, body: unknown, headers?: Record<string, string>) =>
    callService(server.url, 'POST', path, { caller: callerFor(tenantId), body, headers });
  const evaluation = (tenantId: string, body: unknown) => post(tenantId, '/v1/access/v1/evaluation', body);
  const evaluations = (tenantId: string, body: unknown) => post(tenantId, '/v1/access/v1/evaluations', body);

  const subject = { type: 'agent', id: 'agent_bob' };
  const on = (m: Mandate, properties?: Record<string, unknown>) => ({
    type: 'mandate',
    id: m.id,
    ...(properties ? { properties } : {}),
  });

  describe('one evaluation', () => {
    it('when every check passes, then the answer is decision true with verify’s context, and one VERIFICATION_PERFORMED', async () => {
      const tenant = newId('tnt');
      const m = given(tenant, { version: 4 });
      // Subject and action properties are the PEP's attributes: accepted, not read.
      const res = await evaluation(tenant, {
        subject: { ...subject, properties: { department: 'payments', roles: ['clerk'] } },
        action: { name: 'payments:create', properties: { method: 'POST' } },
        resource: on(m),
      });
      expect({ status: res.status, body: res.body }).toEqual({
        status: 200,
        body: {
          decision: true,
          context: {
            reason: 'OK',
            decision_id: expect.stringMatching(/^dec_[0-9a-f]{26}$/),
            mandate_id: m.id,
            mandate_state: 'ACTIVE',
            mandate_version: 4,
          },
        },
      });
      expect(res.headers.get('x-request-id')).toBeTruthy();
      const events = publisher.forTenant(tenant);
      expect(events.map((e) => [e.type, e.data.decision_id, e.data.input])).toEqual([
        [
          'VERIFICATION_PERFORMED',
          res.body.context.decision_id,
          { mandate_id: m.id, action: 'payments:create', delegate_id: 'agent_bob' },
        ],
      ]);
    });

    it('when the mandate is unknown or another tenant’s, then the answer is a 200 decision false with MANDATE_NOT_FOUND', async () => {
      const other = given(newId('tnt'));
      const tenant = newId('tnt');
      for (const id of [other.id, newId('mdt')]) {
        const res = await evaluation(tenant, {
          subject,
          action: { name: 'payments:create' },
          resource: { type: 'mandate', id },
        });
        expect({ status: res.status, body: res.body }).toEqual({
          status: 200,
          body: { decision: false, context: { reason: 'MANDATE_NOT_FOUND', mandate_id: id } },
        });
      }
    });

    it.each(
      (
        [
          ['no subject', { action: { name: 'a' }, resource: { type: 'mandate', id: 'mdt_x' } }, 'subject'],
          [
            'a resource that is not a mandate',
            { subject, action: { name: 'a' }, resource: { type: 'doc', id: 'x' } },
            'resource.type',
          ],
          [
            'an empty action name',
            { subject, action: { name: '' }, resource: { type: 'mandate', id: 'x' } },
            'action.name',
          ],
          [
            'a negative amount',
            {
              subject,
              action: { name: 'a' },
              resource: { type: 'mandate', id: 'x' },
              context: { amount: -1 },
            },
            'context.amount',
          ],
          [
            'an unknown top-level member',
            { subject, action: { name: 'a' }, resource: { type: 'mandate', id: 'x' }, evaluations: [] },
            'evaluations',
          ],
          ['a body that is an array', [], 'body'],
          [
            'a context member verify does not know',
            {
              subject,
              action: { name: 'a' },
              resource: { type: 'mandate', id: 'x' },
              context: { time: 'now' },
            },
            'context.time',
          ],
        ] as [string, unknown, string][]
      ).map(([what, body, field]) => [what, field, body] as const),
    )(
      'when the body has %s, then the answer is a 400 in the error shape naming %s',
      async (_what, field, body) => {
        const res = await evaluation(newId('tnt'), body);
        expect({ status: res.status, keys: Object.keys(res.body).sort(), error: res.body.error }).toEqual({
          status: 400,
          keys: ['error', 'message'],
          error: 'BAD_REQUEST',
        });
        expect(res.body.message).toContain(field);
      },
    );
  });

  describe('equivalence with POST /v1/verify', () => {
    /** Mandates that, together with the generated requests, reach ALLOW and every deny reason. */
    function pool(tenant: string): Mandate[] {
      const verified = {
        method: 'openid4vp',
        assurance: 'SUBSTANTIAL',
        verification_id: 'idv_x',
        issuer: 'https://pid.example',
        verified_at: '2026-01-01T00:00:00.000Z',
      };
      return [
        given(tenant),
        given(tenant, { state: 'SUSPENDED' }),
        given(tenant, { state: 'REVOKED' }),
        given(tenant, { expires_at: '2026-01-02T00:00:00.000Z' }),
        given(tenant, { valid_from: '2026-12-01T00:00:00.000Z' }),
        given(tenant, { principal: { id: 'p', type: 'person', verified } as Mandate['principal'] }),
        given(tenant, { scope: { actions: ['payments:*'], resources: ['acct:1', 'files/*'] } }),
        given(tenant, {
          scope: { actions: ['payments:*'], constraints: { max_amount: 100, currency: 'EUR' } },
        }),
        // 50 left of its budget (the reader's budgetAvailable): 100 passes the limit, not the budget.
        given(tenant, {
          scope: {
            actions: ['payments:*'],
            constraints: { max_amount: 100, currency: 'EUR' },
            budget: { amount: 1_000, period: 'month', timezone: 'UTC' },
          },
        }),
      ];
    }
    /** Absent more often than not where a member narrows what passes, so every reason stays in reach. */
    const sometimes = <T>(weight: number, ...values: T[]) =>
      fc.oneof(
        { arbitrary: fc.constant(undefined), weight },
        { arbitrary: fc.constantFrom(...values), weight: 1 },
      );
    const requestOf = (mandates: Mandate[]) =>
      fc.record({
        mandate: fc.constantFrom(...mandates.map((m) => m.id), 'mdt_unknown'),
        action: fc.oneof(
          { arbitrary: fc.constantFrom('payments:create', 'payments:refund:partial'), weight: 4 },
          { arbitrary: fc.constantFrom('transfers:create', 'payments'), weight: 1 },
        ),
        delegate: fc.oneof(
          { arbitrary: fc.constant('agent_bob'), weight: 4 },
          { arbitrary: fc.constant('agent_eve'), weight: 1 },
        ),
        resource: sometimes(1, 'acct:1', 'acct:2', 'files/a.txt'),
        amount: sometimes(1, 0, 100, 101),
        currency: sometimes(1, 'EUR', 'USD'),
        minAssurance: sometimes(4, 'LOW', 'SUBSTANTIAL', 'HIGH'),
      });

    it('when generated requests are asked both ways, then decision, reason and decision_id agree, and ALLOW and every deny reason were reached', async () => {
      const tenant = newId('tnt');
      const mandates = pool(tenant);
      const reached = new Set<string>();
      await fc.assert(
        fc.asyncProperty(requestOf(mandates), async (r) => {
          const verifyBody = {
            mandate_id: r.mandate,
            action: r.action,
            delegate_id: r.delegate,
            ...(r.resource !== undefined ? { resource: r.resource } : {}),
            ...(r.amount !== undefined ? { amount: r.amount } : {}),
            ...(r.currency !== undefined ? { currency: r.currency } : {}),
            ...(r.minAssurance !== undefined ? { min_assurance: r.minAssurance } : {}),
          };
          const context = {
            ...(r.amount !== undefined ? { amount: r.amount } : {}),
            ...(r.currency !== undefined ? { currency: r.currency } : {}),
            ...(r.minAssurance !== undefined ? { min_assurance: r.minAssurance } : {}),
          };
          const authzenBody = {
            subject: { type: 'agent', id: r.delegate },
            action: { name: r.action },
            resource: {
              type: 'mandate',
              id: r.mandate,
              ...(r.resource !== undefined ? { properties: { resource: r.resource } } : {}),
            },
            ...(Object.keys(context).length > 0 ? { context } : {}),
          };
          const [v, a] = await Promise.all([
            post(tenant, '/v1/verify', verifyBody),
            evaluation(tenant, authzenBody),
          ]);
          // verify's 404 is AuthZEN's decision false with MANDATE_NOT_FOUND; any other answer the same decision.
          const expected =
            v.status === 404
              ? { status: 200, decision: false, reason: 'MANDATE_NOT_FOUND', mandate_id: r.mandate }
              : {
                  status: 200,
                  decision: v.body.decision === 'ALLOW',
                  reason: v.body.reason,
                  decision_id: v.body.decision_id,
                  mandate_id: v.body.mandate_id,
                  mandate_state: v.body.mandate_state,
                  mandate_version: v.body.mandate_version,
                };
          expect({ status: a.status, decision: a.body.decision, ...a.body.context }).toEqual(expected);
          reached.add(expected.reason);
        }),
        { numRuns: 300, seed: 41 },
      );
      expect([...reached].sort()).toEqual(['MANDATE_NOT_FOUND', 'OK', ...DENY_REASONS].sort());
      // 600 calls: generous for a loaded 2-core machine.
    }, 180_000);
  });

  describe('evaluations', () => {
    /** One tenant with an ALLOW mandate and a revoked one. */
    function world() {
      const tenant = newId('tnt');
      return { tenant, ok: given(tenant), revoked: given(tenant, { state: 'REVOKED' }) };
    }
    const reasons = (body: { evaluations: { decision: boolean; context: { reason?: string } }[] }) =>
      body.evaluations.map((e) => [e.decision, e.context.reason]);

    it('when items override the defaults member by member, then each is decided with its own members and the rest from the defaults, in request order', async () => {
      const { tenant, ok, revoked } = world();
      const res = await evaluations(tenant, {
        subject,
        action: { name: 'payments:create' },
        resource: on(ok),
        evaluations: [
          {},
          { action: { name: 'transfers:create' } },
          { resource: on(revoked) },
          { subject: { type: 'agent', id: 'agent_eve' } },
          { context: { amount: 5 } },
        ],
      });
      expect({ status: res.status, reasons: reasons(res.body) }).toEqual({
        status: 200,
        reasons: [
          [true, 'OK'],
          [false, 'ACTION_NOT_PERMITTED'],
          [false, 'MANDATE_REVOKED'],
          [false, 'DELEGATE_MISMATCH'],
          [true, 'OK'],
        ],
      });
      // Each item's decision_id is the one its single evaluation gets.
      const alone = await evaluation(tenant, {
        subject,
        action: { name: 'transfers:create' },
        resource: on(ok),
      });
      expect(res.body.evaluations[1].context.decision_id).toBe(alone.body.context.decision_id);
    });

    it.each([
      ['execute_all', 5],
      ['deny_on_first_deny', 2],
      ['permit_on_first_permit', 1],
    ])(
      'when the semantic is %s, then the answer stops where it says (%d items)',
      async (semantic, answered) => {
        const { tenant, ok, revoked } = world();
        const allow = { resource: on(ok) };
        const deny = { resource: on(revoked) };
        const res = await evaluations(tenant, {
          subject,
          action: { name: 'payments:create' },
          options: { evaluations_semantic: semantic },
          evaluations: [allow, deny, allow, deny, allow],
        });
        expect({
          status: res.status,
          decisions: res.body.evaluations.map((e: { decision: boolean }) => e.decision),
        }).toEqual({
          status: 200,
          decisions: [true, false, true, false, true].slice(0, answered),
        });
        expect(publisher.forTenant(tenant)).toHaveLength(answered);
      },
    );

    it('when the first item denies under permit_on_first_permit, then the answer runs to the first permit', async () => {
      const { tenant, ok, revoked } = world();
      const res = await evaluations(tenant, {
        subject,
        action: { name: 'payments:create' },
        options: { evaluations_semantic: 'permit_on_first_permit' },
        evaluations: [
          { resource: on(revoked) },
          { resource: on(revoked) },
          { resource: on(ok) },
          { resource: on(ok) },
        ],
      });
      expect(reasons(res.body)).toEqual([
        [false, 'MANDATE_REVOKED'],
        [false, 'MANDATE_REVOKED'],
        [true, 'OK'],
      ]);
    });

    it('when an item is bad, then it alone is decision false with context.error and the others are decided', async () => {
      const { tenant, ok } = world();
      const res = await evaluations(tenant, {
        subject,
        resource: on(ok),
        evaluations: [
          { action: { name: 'payments:create' } },
          { action: { name: '' } },
          'not an object',
          {},
          { action: { name: 'payments:create' }, resource: { type: 'mandate', id: 'mdt_nobody' } },
        ],
      });
      expect(res.status).toBe(200);
      expect(res.body.evaluations).toEqual([
        { decision: true, context: expect.objectContaining({ reason: 'OK' }) },
        {
          decision: false,
          context: { error: { status: 400, message: expect.stringContaining('evaluations[1].action.name') } },
        },
        { decision: false, context: { error: { status: 400, message: 'evaluations[2] must be an object' } } },
        {
          decision: false,
          context: { error: { status: 400, message: expect.stringContaining('evaluations[3].action') } },
        },
        { decision: false, context: { reason: 'MANDATE_NOT_FOUND', mandate_id: 'mdt_nobody' } },
      ]);
      // Only the decided item is a VERIFICATION_PERFORMED.
      expect(publisher.forTenant(tenant)).toHaveLength(1);
    });

    it('when the body has no evaluations, then it is one evaluation, answered as /access/v1/evaluation', async () => {
      const { tenant, ok } = world();
      const body = { subject, action: { name: 'payments:create' }, resource: on(ok) };
      const [batch, single] = [await evaluations(tenant, body), await evaluation(tenant, body)];
      expect({ status: batch.status, body: batch.body }).toEqual({ status: 200, body: single.body });
      expect(single.body.decision).toBe(true);
    });

    it.each(
      (
        [
          ['0 items', { evaluations: [] }, 'evaluations'],
          ['101 items', { evaluations: Array.from({ length: 101 }, () => ({})) }, 'evaluations'],
          [
            'an unknown semantic',
            { evaluations: [{}], options: { evaluations_semantic: 'first' } },
            'options.evaluations_semantic',
          ],
          ['a bad default', { subject: { type: 'agent' }, evaluations: [{}] }, 'subject.id'],
        ] as [string, unknown, string][]
      ).map(([what, body, field]) => [what, field, body] as const),
    )(
      'when the request has %s, then it is a 400 in the error shape naming %s',
      async (_what, field, body) => {
        const res = await evaluations(newId('tnt'), body);
        expect({ status: res.status, keys: Object.keys(res.body).sort() }).toEqual({
          status: 400,
          keys: ['error', 'message'],
        });
        expect(res.body.message).toContain(field);
      },
    );

    it.each([1, 100])(
      'when %d items over 10 mandates are sent, then each is decided in order, each mandate is read once and the events go in one publish',
      async (n) => {
        const tenant = newId('tnt');
        const mandates = Array.from({ length: 10 }, (_, i) => given(tenant, { version: i + 1 }));
        const items = Array.from({ length: n }, (_, i) => ({ resource: on(mandates[i % 10]!) }));
        const res = await evaluations(tenant, {
          subject,
          action: { name: 'payments:create' },
          evaluations: items,
        });
        expect(res.status).toBe(200);
        expect(
          res.body.evaluations.map(
            (e: { context: { mandate_version: number } }) => e.context.mandate_version,
          ),
        ).toEqual(items.map((_, i) => (i % 10) + 1));
        const used = mandates.slice(0, Math.min(n, 10));
        expect(used.map((m) => reader.reads.get(m.id))).toEqual(used.map(() => 1));
        expect({ events: publisher.forTenant(tenant).length, calls: publisher.callsFor(tenant) }).toEqual({
          events: n,
          calls: 1,
        });
      },
    );

    it('when the mandate is revoked while a batch reads it, then every item of the batch on that mandate shows one state', async () => {
      const tenant = newId('tnt');
      const m = given(tenant);
      const other = given(tenant);
      // The revoke lands right after the batch's read of the mandate, before any item is decided.
      reader.afterRead = (id) => {
        if (id === m.id) reader.inner.put({ ...m, state: 'REVOKED', version: m.version + 1 });
      };
      const items = Array.from({ length: 50 }, (_, i) => ({ resource: on(i % 2 ? m : other) }));
      const res = await evaluations(tenant, {
        subject,
        action: { name: 'payments:create' },
        evaluations: items,
      });
      const onM = res.body.evaluations.filter(
        (e: { context: { mandate_id: string } }) => e.context.mandate_id === m.id,
      );
      expect(onM).toHaveLength(25);
      expect(new Set(onM.map((e: { context: unknown }) => JSON.stringify(e.context))).size).toBe(1);
      expect(onM[0].context).toMatchObject({ reason: 'OK', mandate_version: m.version });
      // The next batch sees the revoke, in all of its items.
      const after = await evaluations(tenant, {
        subject,
        action: { name: 'payments:create' },
        evaluations: items,
      });
      const revokedNow = after.body.evaluations.filter(
        (e: { context: { mandate_id: string } }) => e.context.mandate_id === m.id,
      );
      expect(new Set(revokedNow.map((e: { context: { reason: string } }) => e.context.reason))).toEqual(
        new Set(['MANDATE_REVOKED']),
      );
    });
  });

  it('when the metadata is read, then it names the evaluation endpoints under PUBLIC_BASE_URL', async () => {
    const res = await callService(server.url, 'GET', '/v1/.well-known/authzen-configuration', {
      caller: callerFor(null),
    });
    expect({ status: res.status, body: res.body }).toEqual({
      status: 200,
      body: {
        policy_decision_point: 'https://pdp.example.com',
        access_evaluation_endpoint: 'https://pdp.example.com/access/v1/evaluation',
        access_evaluations_endpoint: 'https://pdp.example.com/access/v1/evaluations',
      },
    });
  });
});
