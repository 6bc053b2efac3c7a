import fc from 'fast-check';
import { verifyRequestSchema } from '@mandate/verify';
import {
  decide,
  type VerifyInput,
  type Mandate,
  fastVerifyRequest,
  buildMandate,
  NOW,
} from '@mandate/verify/testing';

/**
 * Verify fails closed (issue 11, item 14; docs/API.md, "Verify") and allows only what the mandate grants:
 * generated mandates (every state, time window, delegate, verified principal, actions, resources,
 * limit and currency) against generated requests, each field either fitted to the mandate or not.
 * Every decision is held against an oracle written here from the documented rules (docs/API.md
 * "Verify" and "Mandates": the checks in their order, a trailing `*` matching any suffix), so an
 * ALLOW that skips any check — a resource, a currency, a state — fails the property.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 2_000);

const HOUR = 3_600_000;
const at = (offsetHours: number) => new Date(NOW.getTime() + offsetHours * HOUR).toISOString();
const LEVELS = ['LOW', 'SUBSTANTIAL', 'HIGH'];
const VERIFIED = {
  method: 'openid4vp' as const,
  verification_id: 'idv_x',
  issuer: 'https://pid.example',
  subject_id: 'sub',
  claims_digest: 'd',
  verified_at: '2026-01-01T00:00:00.000Z',
};

// --- The oracle: the documented rules, written independently of services/verify/src/domain. ---

/** "a trailing `*` segment matches any suffix": `*`, `payments:*`, `/invoices/*`, `acct_*`; else exact. */
function patternAllows(pattern: string, value: string, segmented: boolean): boolean {
  if (!pattern.endsWith('*')) return pattern === value;
  const stem = pattern.slice(0, -1);
  // Actions are `:`-segmented: only a whole `*` or a `prefix:*` is a wildcard there.
  if (segmented && stem !== '' && !stem.endsWith(':')) return pattern === value;
  return value.length >= stem.length && value.slice(0, stem.length) === stem;
}

/** Every documented check the request fails, in the documented order (empty: ALLOW). */
function failures(m: Mandate, input: VerifyInput): string[] {
  const out: string[] = [];
  const expired = m.expires_at != null && new Date(m.expires_at) <= NOW;
  const state = (m.state === 'ACTIVE' || m.state === 'SUSPENDED') && expired ? 'EXPIRED' : m.state;
  if (state !== 'ACTIVE') out.push(`MANDATE_${state}`);
  if (m.valid_from != null && new Date(m.valid_from) > NOW) out.push('MANDATE_NOT_YET_VALID');
  if (input.delegate_id !== undefined && input.delegate_id !== m.delegate.id) out.push('DELEGATE_MISMATCH');
  if (input.min_assurance !== undefined) {
    const has = m.principal?.verified?.assurance;
    if (has == null) out.push('PRINCIPAL_NOT_VERIFIED');
    else if (!LEVELS.includes(has) || LEVELS.indexOf(has) < LEVELS.indexOf(input.min_assurance))
      out.push('ASSURANCE_TOO_LOW');
  }
  if (!m.scope.actions.some((p) => patternAllows(p, input.action, true))) out.push('ACTION_NOT_PERMITTED');
  const resources = m.scope.resources;
  if (
    resources != null &&
    (input.resource === undefined || !resources.some((p) => patternAllows(p, input.resource!, false)))
  )
    out.push('RESOURCE_NOT_PERMITTED');
  const limit = m.scope.constraints?.max_amount;
  const currency = m.scope.constraints?.currency;
  if (limit != null && input.amount === undefined) out.push('AMOUNT_REQUIRED');
  if (currency != null && input.currency !== currency) out.push('CURRENCY_MISMATCH');
  if (limit != null && input.amount !== undefined && input.amount > limit) out.push('AMOUNT_EXCEEDS_LIMIT');
  return out;
}

// --- The generators. ---

const ACTION_PATTERNS = [
  '*',
  'payments:*',
  'payments:create',
  'payments:refund:*',
  'refunds:*',
  'payments',
  'pay*',
];
const ACTIONS = [
  'payments:create',
  'payments:refund',
  'payments:refund:partial',
  'refunds:create',
  'payments',
  'payx',
];
const RESOURCE_PATTERNS = ['acct:1', 'acct:*', '/invoices/*', 'acct_*', '*', 'acct'];
const RESOURCES = ['acct:1', 'acct:2', 'acct:10', '/invoices/9', '/invoices', 'acct_7', 'acct', ''];

const scopeArb = fc.record(
  {
    actions: fc.array(fc.constantFrom(...ACTION_PATTERNS), { minLength: 1, maxLength: 2 }),
    resources: fc.array(fc.constantFrom(...RESOURCE_PATTERNS), { minLength: 1, maxLength: 3 }),
    constraints: fc.record(
      { max_amount: fc.nat(1_000_000), currency: fc.constantFrom('EUR', 'USD') },
      { requiredKeys: [] },
    ),
  },
  { requiredKeys: ['actions'] },
);

const mandateArb = fc
  .record({
    scope: scopeArb,
    state: fc.oneof(
      { weight: 6, arbitrary: fc.constant('ACTIVE' as const) },
      { weight: 1, arbitrary: fc.constantFrom('SUSPENDED' as const, 'REVOKED' as const, 'EXPIRED' as const) },
    ),
    valid_from: fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(null, at(-24), at(0)) },
      { weight: 1, arbitrary: fc.constantFrom(at(1), at(24 * 30)) },
    ),
    expires_at: fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(null, at(1 / 3600), at(24 * 365)) },
      { weight: 1, arbitrary: fc.constantFrom(at(0), at(-1)) },
    ),
    delegate: fc.constantFrom('agent_bob', 'agent_eve').map((id) => ({ id, type: 'agent' as const })),
    verified: fc.option(fc.constantFrom('LOW', 'SUBSTANTIAL', 'HIGH', 'VERY_HIGH'), { nil: undefined }),
  })
  .map(({ scope, verified, ...rest }) =>
    buildMandate({
      ...rest,
      scope,
      principal: {
        id: 'user_alice',
        ...(verified === undefined
          ? {}
          : {
              // VERY_HIGH is outside the contract (cast): an unknown level must still fail closed.
              verified: { ...VERIFIED, assurance: verified } as NonNullable<Mandate['principal']['verified']>,
            }),
      },
    }),
  );

/** One of the values that fit, or (less often) any value: most requests pass most checks. */
const fitOrAny = <T>(fitting: T[], any: fc.Arbitrary<T>) =>
  fitting.length === 0
    ? any
    : fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...fitting) }, { weight: 1, arbitrary: any });
const optional = <T>(arb: fc.Arbitrary<T>, absent: number) =>
  fc.oneof({ weight: 10 - absent, arbitrary: arb }, { weight: absent, arbitrary: fc.constant(undefined) });

const inputArb = (m: Mandate): fc.Arbitrary<VerifyInput> => {
  const limit = m.scope.constraints?.max_amount;
  const currency = m.scope.constraints?.currency;
  const resources = m.scope.resources;
  return fc
    .record({
      action: fitOrAny(
        ACTIONS.filter((a) => m.scope.actions.some((p) => patternAllows(p, a, true))),
        fc.constantFrom(...ACTIONS),
      ),
      resource: optional(
        fitOrAny(
          RESOURCES.filter((r) => resources?.some((p) => patternAllows(p, r, false)) ?? true),
          fc.constantFrom(...RESOURCES),
        ),
        1,
      ),
      amount: optional(
        limit == null
          ? fc.nat(2_000_000)
          : fc.oneof(
              { weight: 5, arbitrary: fc.constantFrom(0, limit).chain((b) => fc.nat(b)) },
              { weight: 1, arbitrary: fc.constantFrom(limit, limit + 1, 2_000_000) },
            ),
        1,
      ),
      currency: optional(
        fitOrAny(currency == null ? [] : [currency], fc.constantFrom('EUR', 'USD', 'JPY')),
        1,
      ),
      delegate_id: optional(fitOrAny([m.delegate.id], fc.constantFrom('agent_bob', 'agent_eve', '')), 5),
      min_assurance: optional(fc.constantFrom(...LEVELS), 7),
    })
    .map((fields) => {
      const input: VerifyInput = { mandate_id: m.id, action: fields.action };
      for (const [key, value] of Object.entries(fields))
        if (value !== undefined) (input as unknown as Record<string, unknown>)[key] = value;
      return input;
    });
};

const caseArb = mandateArb.chain((mandate) => inputArb(mandate).map((input) => ({ mandate, input })));

describe('verify fails closed (property-based)', () => {
  it(`when ${RUNS} generated requests meet generated mandates, then an ALLOW comes only when every documented check passes, and a DENY names the first that fails`, () => {
    let allows = 0;
    fc.assert(
      fc.property(caseArb, ({ mandate, input }) => {
        const d = decide(mandate, input, NOW);
        const failed = failures(mandate, input);
        if (d.decision === 'ALLOW') allows++;
        // An ALLOW also names the active mandate and the version it was decided on.
        expect(d).toEqual(
          expect.objectContaining(
            failed.length === 0
              ? {
                  decision: 'ALLOW',
                  reason: 'OK',
                  mandate_state: 'ACTIVE',
                  mandate_id: mandate.id,
                  mandate_version: mandate.version,
                }
              : { decision: 'DENY', reason: failed[0] },
          ),
        );
      }),
      { numRuns: RUNS },
    );
    console.log(
      `verify fail-closed property: ${allows} of ${RUNS} decisions were an ALLOW (${((100 * allows) / RUNS).toFixed(1)} %)`,
    );
    // Every ALLOW is checked against every rule above; too few of them and the property proves little.
    expect(allows / RUNS).toBeGreaterThanOrEqual(0.1);
  });

  it(`when ${RUNS} generated requests leave out what the mandate's scope names, then none is an ALLOW`, () => {
    fc.assert(
      fc.property(caseArb, ({ mandate, input }) => {
        const d = decide(mandate, input, NOW);
        const constraints = mandate.scope.constraints ?? {};
        const leftOut =
          (mandate.scope.resources != null && input.resource === undefined) ||
          (constraints.max_amount != null && input.amount === undefined) ||
          (constraints.currency != null && input.currency !== constraints.currency);
        // A request that leaves out any of them is a DENY; one that leaves out none is not this property's.
        expect(leftOut ? d.decision : 'DENY').toBe('DENY');
      }),
      { numRuns: RUNS },
    );
  });

  it(`when ${RUNS} generated bodies go through the fast body check and through zod, then both give the same decision`, () => {
    fc.assert(
      fc.property(caseArb, ({ mandate, input }) => {
        const body = JSON.parse(JSON.stringify(input)) as unknown;
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
      fc.property(caseArb, ({ mandate, input }) => {
        const legacy = { ...mandate, state: 'ACTIVE' as const, valid_from: null, expires_at: null };
        legacy.scope = { actions: ['*'], resources: [] };
        const d = decide(legacy, { ...input, delegate_id: undefined, min_assurance: undefined }, NOW);
        expect(d.reason).toBe('RESOURCE_NOT_PERMITTED');
      }),
      { numRuns: Math.min(RUNS, 500) },
    );
  });
});
