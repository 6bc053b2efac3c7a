import fc from 'fast-check';
import { fixedClock, newId } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { type RunningServer } from '@mandate/shared/http';
import { CapturingPublisher, callService, callerFor, testTokens } from '@mandate/shared/testing';
import { DENY_REASONS, OfflineVerifier, type OfflineRequest } from '@mandate/verifier';
import { ASSURANCE_LEVELS } from '@mandate/verifier/decide';
import {
  ASSURANCE_LEVELS as VERIFY_ASSURANCE_LEVELS,
  DENY_REASONS as VERIFY_DENY_REASONS,
} from '@mandate/verify';
import {
  createApp as createMandates,
  type MandatesApp,
  LocalSigner,
  MemoryMandateStore,
} from '@mandate/mandates/testing';
import { createApp as createVerify, type VerifyApp, HttpMandateReader } from '@mandate/verify/testing';

const logger = createLogger('offline-equivalence-test', 'silent');
const MINUTE = 60_000;

/**
 * docs/DECISIONS.md, "Status lists (v3)": `verifyOffline` against a freshly fetched list answers as POST /v1/verify, for random
 * mandates, lifecycle histories (time passing included) and requests. Both services run in-process
 * on one controlled clock; the online answer goes through verify's HTTP route.
 */
describe('offline verification ≡ POST /v1/verify (property)', () => {
  const clock = fixedClock('2031-05-01T08:00:00.000Z');
  let mandates: MandatesApp;
  let verify: VerifyApp;
  let mandatesServer: RunningServer;
  let verifyServer: RunningServer;
  let offline: OfflineVerifier;

  beforeAll(async () => {
    const signer = await LocalSigner.create();
    mandates = createMandates({
      store: new MemoryMandateStore(),
      publisher: new CapturingPublisher(),
      signer,
      tokens: testTokens,
      logger,
      clock,
    });
    mandatesServer = await mandates.start(0);
    verify = createVerify({
      reader: new HttpMandateReader({ baseUrls: [mandatesServer.url], logger }),
      publisher: new CapturingPublisher(),
      tokens: testTokens,
      logger,
      clock,
    });
    verifyServer = await verify.start(0);
    offline = new OfflineVerifier({ jwks: { keys: await signer.publicJwks() } });
  });
  afterAll(async () => {
    await verify.stop();
    await mandates.stop();
  });

  const scopeArb = fc.record(
    {
      actions: fc.constantFrom(['*'], ['payments:*'], ['payments:create', 'refunds:create']),
      resources: fc.constantFrom(['acct_*'], ['/accounts/a1'], ['acct_1', '/accounts/*']),
      constraints: fc.record(
        { max_amount: fc.integer({ min: 0, max: 1000 }), currency: fc.constantFrom('EUR', 'USD') },
        { requiredKeys: [] },
      ),
    },
    { requiredKeys: ['actions'] },
  );
  const mandateArb = fc.record({
    scope: scopeArb,
    validFromMinutes: fc.option(fc.integer({ min: -60, max: 60 }), { nil: undefined }),
    expiresInMinutes: fc.option(fc.integer({ min: 61, max: 240 }), { nil: undefined }),
  });
  const stepArb = fc.oneof(
    fc.constantFrom('suspend', 'reactivate', 'revoke'),
    fc.integer({ min: 1, max: 150 }).map((minutes) => ({ minutes })),
  );
  const requestArb: fc.Arbitrary<OfflineRequest> = fc.record(
    {
      action: fc.constantFrom('payments:create', 'refunds:create', 'reports:read'),
      resource: fc.constantFrom('acct_1', 'acct_2', '/accounts/a1', '/accounts/b', 'other'),
      amount: fc.integer({ min: 0, max: 2000 }),
      currency: fc.constantFrom('EUR', 'USD'),
      delegate_id: fc.constantFrom('bot', 'someone-else'),
      min_assurance: fc.constantFrom('LOW', 'HIGH'),
    },
    { requiredKeys: ['action'] },
  );

  it("when the decision module's vocabulary is read, then it is verify's contract, in the same order", () => {
    expect([...DENY_REASONS]).toEqual([...VERIFY_DENY_REASONS]);
    expect([...ASSURANCE_LEVELS]).toEqual([...VERIFY_ASSURANCE_LEVELS]);
  });

  it('when random mandates, histories and requests are checked both ways, then decision and reason agree (1,000 cases)', async () => {
    let revokedThenExpired = 0;
    // Every outcome the cases reached online: agreement means little unless they span them all.
    const reached = new Set<string>();
    await fc.assert(
      fc.asyncProperty(
        mandateArb,
        fc.array(stepArb, { maxLength: 5 }),
        requestArb,
        async (spec, steps, request) => {
          const tenantId = newId('tnt');
          const call = (method: string, url: string, path: string, body?: unknown) =>
            callService(url, method, path, { caller: callerFor(tenantId), body });
          const at = (minutes: number) => new Date(clock.now().getTime() + minutes * MINUTE).toISOString();
          const created = await call('POST', mandatesServer.url, '/v1/mandates', {
            principal: 'alice',
            delegate: 'bot',
            scope: spec.scope,
            ...(spec.validFromMinutes !== undefined ? { valid_from: at(spec.validFromMinutes) } : {}),
            ...(spec.expiresInMinutes !== undefined ? { expires_at: at(spec.expiresInMinutes) } : {}),
          });
          expect(created.status).toBe(201);
          // A lifecycle step is applied (200) or refused in the state the mandate is in (409).
          const refusedOtherwise: number[] = [];
          for (const step of steps) {
            if (typeof step === 'string') {
              const res = await call(
                'POST',
                mandatesServer.url,
                `/v1/mandates/${created.body.id}/${step}`,
                {},
              );
              if (res.status !== 200 && res.status !== 409) refusedOtherwise.push(res.status);
            } else clock.advance(step.minutes * MINUTE);
          }
          expect(refusedOtherwise).toEqual([]);
          // A new fetch after the last change (past the replica's one-second reuse of a rendering).
          clock.advance(1_001);
          const online = await call('POST', verifyServer.url, '/v1/verify', {
            mandate_id: created.body.id,
            ...request,
          });
          expect(online.status).toBe(200);
          const list = await callService(
            mandatesServer.url,
            'GET',
            new URL(created.body.status.status_list.uri).pathname,
            { caller: callerFor(null) },
          );
          expect(list.status).toBe(200);
          const answer = await offline.verify({
            jws: created.body.signature.jws,
            request,
            statusList: list.body as string,
            now: clock.now(),
            tenant_id: tenantId,
          });
          // The one case the list cannot tell apart (docs/DECISIONS.md, "Status lists (v3)"): REVOKED and EXPIRED are both 1, and a 1
          // past expires_at reads MANDATE_EXPIRED; online, a revoked mandate stays MANDATE_REVOKED.
          const listCannotTell =
            online.body.reason === 'MANDATE_REVOKED' &&
            Date.parse(created.body.expires_at) <= clock.now().getTime();
          if (listCannotTell) revokedThenExpired++;
          reached.add(online.body.decision === 'ALLOW' ? 'ALLOW' : String(online.body.reason));
          expect(answer).toEqual(
            listCannotTell
              ? { decision: 'DENY', reason: 'MANDATE_EXPIRED' }
              : { decision: online.body.decision, reason: online.body.reason },
          );
        },
      ),
      // A fixed seed: the coverage below is a property of these cases, not of luck (FUZZ_SEED-style
      // variation would make it flaky: AMOUNT_EXCEEDS_LIMIT needs five checks to pass first).
      { numRuns: 1_000, seed: 7 },
    );
    // Most cases are the exact agreement above, not the documented exception.
    expect(revokedThenExpired).toBeLessThan(100);
    // ALLOW and every deny reason were reached, but ASSURANCE_TOO_LOW (it needs a principal verified
    // below the asked level, and no case here verifies one) and BUDGET_EXCEEDED (no case has a
    // budget: offline, a budget is never decided, docs/API.md#budgets).
    const expected = [
      'ALLOW',
      ...DENY_REASONS.filter((r) => r !== 'ASSURANCE_TOO_LOW' && r !== 'BUDGET_EXCEEDED'),
    ];
    expect(expected.filter((outcome) => !reached.has(outcome))).toEqual([]);
  }, 300_000);
});
