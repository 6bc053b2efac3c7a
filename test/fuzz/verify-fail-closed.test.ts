import fc from 'fast-check';
import { decide, type VerifyInput } from '../../services/verify/src/domain/decide';
import { fastVerifyRequest, verifyRequestSchema } from '../../services/verify/src/http/schemas';
import { buildMandate, NOW } from '../../services/verify/test/factories';

/**
 * Verify fails closed (issue 11, item 14; SPEC §5 v2): generated mandates that name resources, a
 * limit or a currency against generated requests that may leave any of them out. Whatever the mix,
 * a request missing what the scope names is never an ALLOW, and the fast body check and zod agree.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 2_000);

const scopeArb = fc.record(
  {
    actions: fc.constantFrom('*', 'payments:*', 'payments:create').map((a) => [a]),
    resources: fc.array(fc.constantFrom('acct:1', 'acct:*', '/invoices/*'), { minLength: 1, maxLength: 3 }),
    constraints: fc.record(
      { max_amount: fc.nat(1_000_000), currency: fc.constantFrom('EUR', 'USD') },
      { requiredKeys: [] },
    ),
  },
  { requiredKeys: ['actions'] },
);

const inputArb = fc.record(
  {
    action: fc.constantFrom('payments:create', 'payments:refund'),
    resource: fc.constantFrom('acct:1', 'acct:2', '/invoices/9', ''),
    amount: fc.nat(2_000_000),
    currency: fc.constantFrom('EUR', 'USD', 'JPY'),
  },
  { requiredKeys: ['action'] },
);

describe('verify fails closed (property-based)', () => {
  it(`when ${RUNS} generated requests leave out what the mandate's scope names, then none is an ALLOW`, () => {
    fc.assert(
      fc.property(scopeArb, inputArb, (scope, partial) => {
        const mandate = buildMandate({ scope });
        const body = { mandate_id: mandate.id, ...partial };
        const d = decide(mandate, body, NOW);
        const constraints = scope.constraints ?? {};
        if (scope.resources !== undefined && body.resource === undefined) expect(d.decision).toBe('DENY');
        if (constraints.max_amount !== undefined && body.amount === undefined)
          expect(d.decision).toBe('DENY');
        if (constraints.currency !== undefined && body.currency !== constraints.currency)
          expect(d.decision).toBe('DENY');
        if (d.decision === 'ALLOW') {
          if (constraints.max_amount !== undefined)
            expect(body.amount).toBeLessThanOrEqual(constraints.max_amount);
          if (scope.resources !== undefined) expect(body.resource).toBeDefined();
        }
      }),
      { numRuns: RUNS },
    );
  });

  it(`when ${RUNS} generated bodies go through the fast body check and through zod, then both give the same decision`, () => {
    fc.assert(
      fc.property(scopeArb, inputArb, (scope, partial) => {
        const mandate = buildMandate({ scope });
        const body = { mandate_id: mandate.id, ...partial };
        const fast = fastVerifyRequest(body);
        const slow = verifyRequestSchema.parse(body) as VerifyInput;
        expect(fast).toBeDefined();
        expect(decide(mandate, fast!, NOW)).toEqual(decide(mandate, slow, NOW));
      }),
      { numRuns: RUNS },
    );
  });

  it('when a stored mandate has resources: [] (created before v2), then no request is an ALLOW', () => {
    fc.assert(
      fc.property(inputArb, (partial) => {
        const mandate = buildMandate({ scope: { actions: ['*'], resources: [] } });
        expect(decide(mandate, { mandate_id: mandate.id, ...partial }, NOW).reason).toBe(
          'RESOURCE_NOT_PERMITTED',
        );
      }),
      { numRuns: Math.min(RUNS, 500) },
    );
  });
});
