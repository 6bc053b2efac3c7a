import { decide, serialiseDecision, type Reason, type VerifyInput } from '../src/domain/decide';
import { actionMatches, resourceMatches } from '../src/domain/patterns';
import { buildMandate, NOW } from './factories';

const PAST = '2026-05-01T00:00:00.000Z';
const FUTURE = '2026-07-01T00:00:00.000Z';

const payments = {
  actions: ['payments:*'],
  resources: ['acct:123', '/invoices/*'],
  constraints: { max_amount: 10_000, currency: 'EUR' },
};

interface Case {
  name: string;
  mandate: Parameters<typeof buildMandate>[0];
  input: Partial<VerifyInput>;
  reason: Reason;
  state?: string;
}

const verifiedPrincipal = (assurance: string) => ({
  id: 'alice',
  verified: { method: 'openid4vp', assurance, verification_id: 'idv_x', issuer: 'https://pid.example' },
});

const cases: Case[] = [
  {
    name: 'min_assurance HIGH and the principal is wallet-verified HIGH',
    mandate: { principal: verifiedPrincipal('HIGH') } as Parameters<typeof buildMandate>[0],
    input: { min_assurance: 'HIGH' },
    reason: 'OK',
  },
  {
    name: 'min_assurance is asked and the principal is not wallet-verified',
    mandate: {},
    input: { min_assurance: 'HIGH' },
    reason: 'PRINCIPAL_NOT_VERIFIED',
  },
  {
    name: 'min_assurance HIGH and the principal is verified at a lower level',
    mandate: { principal: verifiedPrincipal('SUBSTANTIAL') } as Parameters<typeof buildMandate>[0],
    input: { min_assurance: 'HIGH' },
    reason: 'ASSURANCE_TOO_LOW',
  },
  {
    name: 'min_assurance HIGH and the principal carries an unknown level',
    mandate: { principal: verifiedPrincipal('SOMETHING') } as Parameters<typeof buildMandate>[0],
    input: { min_assurance: 'HIGH' },
    reason: 'ASSURANCE_TOO_LOW',
  },
  {
    name: 'everything matches',
    mandate: { scope: payments },
    input: { resource: 'acct:123', amount: 10_000, currency: 'EUR' },
    reason: 'OK',
  },
  {
    name: 'the mandate is suspended',
    mandate: { state: 'SUSPENDED' },
    input: {},
    reason: 'MANDATE_SUSPENDED',
    state: 'SUSPENDED',
  },
  {
    name: 'the mandate is revoked',
    mandate: { state: 'REVOKED' },
    input: {},
    reason: 'MANDATE_REVOKED',
    state: 'REVOKED',
  },
  {
    name: 'the mandate is stored EXPIRED',
    mandate: { state: 'EXPIRED', expires_at: PAST },
    input: {},
    reason: 'MANDATE_EXPIRED',
    state: 'EXPIRED',
  },
  {
    name: 'a stored ACTIVE mandate is past expires_at',
    mandate: { expires_at: PAST },
    input: {},
    reason: 'MANDATE_EXPIRED',
    state: 'EXPIRED',
  },
  {
    name: 'expires_at is exactly now',
    mandate: { expires_at: NOW.toISOString() },
    input: {},
    reason: 'MANDATE_EXPIRED',
    state: 'EXPIRED',
  },
  {
    name: 'a stored SUSPENDED mandate is past expires_at',
    mandate: { state: 'SUSPENDED', expires_at: PAST },
    input: {},
    reason: 'MANDATE_EXPIRED',
    state: 'EXPIRED',
  },
  {
    name: 'a revoked mandate is past expires_at',
    mandate: { state: 'REVOKED', expires_at: PAST },
    input: {},
    reason: 'MANDATE_REVOKED',
    state: 'REVOKED',
  },
  {
    name: 'valid_from is in the future',
    mandate: { valid_from: FUTURE },
    input: {},
    reason: 'MANDATE_NOT_YET_VALID',
    state: 'ACTIVE',
  },
  { name: 'valid_from is exactly now', mandate: { valid_from: NOW.toISOString() }, input: {}, reason: 'OK' },
  { name: 'there is no expiry at all', mandate: { expires_at: null }, input: {}, reason: 'OK' },
  {
    name: 'the delegate differs',
    mandate: {},
    input: { delegate_id: 'agent_eve' },
    reason: 'DELEGATE_MISMATCH',
  },
  { name: 'the delegate matches', mandate: {}, input: { delegate_id: 'agent_bob' }, reason: 'OK' },
  {
    name: 'the action is outside the scope',
    mandate: {},
    input: { action: 'transfers:create' },
    reason: 'ACTION_NOT_PERMITTED',
  },
  {
    name: 'the mandate lists no actions',
    mandate: { scope: { actions: [] } },
    input: {},
    reason: 'ACTION_NOT_PERMITTED',
  },
  {
    name: 'the resource is outside the scope',
    mandate: { scope: payments },
    input: { resource: 'acct:999' },
    reason: 'RESOURCE_NOT_PERMITTED',
  },
  {
    name: 'the mandate lists resources and the request names none',
    mandate: { scope: payments },
    input: {},
    reason: 'RESOURCE_NOT_PERMITTED',
  },
  {
    name: 'the mandate lists no resources',
    mandate: { scope: { actions: ['*'] } },
    input: { resource: 'anything/at/all' },
    reason: 'OK',
  },
  {
    name: 'a stored mandate has an empty resource list (fail closed)',
    mandate: { scope: { actions: ['*'], resources: [] } },
    input: { resource: 'x' },
    reason: 'RESOURCE_NOT_PERMITTED',
  },
  {
    name: 'a stored mandate has an empty resource list and the request names none (fail closed)',
    mandate: { scope: { actions: ['*'], resources: [] } },
    input: {},
    reason: 'RESOURCE_NOT_PERMITTED',
  },
  {
    name: 'the currency differs',
    mandate: { scope: payments },
    input: { resource: 'acct:123', amount: 1, currency: 'USD' },
    reason: 'CURRENCY_MISMATCH',
  },
  {
    name: 'an amount comes without a currency',
    mandate: { scope: payments },
    input: { resource: 'acct:123', amount: 1 },
    reason: 'CURRENCY_MISMATCH',
  },
  {
    name: 'a currency comes without an amount and the mandate has a limit',
    mandate: { scope: payments },
    input: { resource: 'acct:123', currency: 'USD' },
    reason: 'AMOUNT_REQUIRED',
  },
  {
    name: 'neither amount nor currency is given and the mandate has a limit',
    mandate: { scope: payments },
    input: { resource: 'acct:123' },
    reason: 'AMOUNT_REQUIRED',
  },
  {
    name: 'no amount is given and the limit is the only constraint',
    mandate: { scope: { actions: ['*'], constraints: { max_amount: 100 } } },
    input: {},
    reason: 'AMOUNT_REQUIRED',
  },
  {
    name: 'no currency is given and the mandate names one (no limit)',
    mandate: { scope: { actions: ['*'], constraints: { currency: 'EUR' } } },
    input: {},
    reason: 'CURRENCY_MISMATCH',
  },
  {
    name: 'the currency matches and the mandate has no limit',
    mandate: { scope: { actions: ['*'], constraints: { currency: 'EUR' } } },
    input: { currency: 'EUR' },
    reason: 'OK',
  },
  {
    name: 'resource missing and amount missing (order)',
    mandate: { scope: payments },
    input: {},
    reason: 'RESOURCE_NOT_PERMITTED',
  },
  {
    name: 'amount missing and currency missing (order)',
    mandate: { scope: payments },
    input: { resource: 'acct:123' },
    reason: 'AMOUNT_REQUIRED',
  },
  {
    name: 'a currency is given and the mandate has none',
    mandate: {},
    input: { amount: 5, currency: 'JPY' },
    reason: 'OK',
  },
  {
    name: 'the amount exceeds the limit',
    mandate: { scope: payments },
    input: { resource: 'acct:123', amount: 10_001, currency: 'EUR' },
    reason: 'AMOUNT_EXCEEDS_LIMIT',
  },
  {
    name: 'an amount is given and the mandate has no limit',
    mandate: {},
    input: { amount: 10 ** 12 },
    reason: 'OK',
  },
  {
    name: 'a limit without currency is exceeded',
    mandate: { scope: { actions: ['*'], constraints: { max_amount: 0 } } },
    input: { amount: 1 },
    reason: 'AMOUNT_EXCEEDS_LIMIT',
  },
  // Order: the earlier check wins whatever else fails.
  {
    name: 'suspended with a wrong delegate (order)',
    mandate: { state: 'SUSPENDED' },
    input: { delegate_id: 'agent_eve' },
    reason: 'MANDATE_SUSPENDED',
    state: 'SUSPENDED',
  },
  {
    name: 'expired with an action not permitted (order)',
    mandate: { expires_at: PAST },
    input: { action: 'transfers:create' },
    reason: 'MANDATE_EXPIRED',
    state: 'EXPIRED',
  },
  {
    name: 'not yet valid with a wrong delegate (order)',
    mandate: { valid_from: FUTURE },
    input: { delegate_id: 'agent_eve' },
    reason: 'MANDATE_NOT_YET_VALID',
  },
  {
    name: 'wrong delegate and action not permitted (order)',
    mandate: {},
    input: { delegate_id: 'agent_eve', action: 'x' },
    reason: 'DELEGATE_MISMATCH',
  },
  {
    name: 'action and resource not permitted (order)',
    mandate: { scope: payments },
    input: { action: 'x', resource: 'acct:999' },
    reason: 'ACTION_NOT_PERMITTED',
  },
  {
    name: 'resource not permitted and currency differs (order)',
    mandate: { scope: payments },
    input: { resource: 'acct:999', amount: 1, currency: 'USD' },
    reason: 'RESOURCE_NOT_PERMITTED',
  },
  {
    name: 'currency differs and amount too high (order)',
    mandate: { scope: payments },
    input: { resource: 'acct:123', amount: 99_999, currency: 'USD' },
    reason: 'CURRENCY_MISMATCH',
  },
];

describe('decide()', () => {
  it.each(cases)('when $name, then the reason is $reason', ({ mandate, input, reason, state }) => {
    const m = buildMandate(mandate);
    const d = decide(m, { mandate_id: m.id, action: 'payments:create', ...input }, NOW);
    expect({ reason: d.reason, decision: d.decision }).toEqual({
      reason,
      decision: reason === 'OK' ? 'ALLOW' : 'DENY',
    });
    expect(d.mandate_state).toBe(state ?? 'ACTIVE');
    expect(d.mandate_id).toBe(m.id);
    expect(d.mandate_version).toBe(m.version);
    expect(d.decision_id).toMatch(/^dec_[0-9a-f]{26}$/);
  });
});

describe('action patterns', () => {
  it.each([
    ['payments:create', 'payments:create', true],
    ['payments:create', 'payments:refund', false],
    ['*', 'anything:at:all', true],
    ['payments:*', 'payments:create', true],
    ['payments:*', 'payments:refund:partial', true],
    ['payments:*', 'payments', false],
    ['payments:*', 'paymentsx:create', false],
    ['payments:refund:*', 'payments:refund:partial', true],
    ['payments:refund:*', 'payments:create', false],
    ['Payments:create', 'payments:create', false],
    ['payments*', 'payments:create', false],
    ['pay*:create', 'payments:create', false],
  ])('when the pattern is %s and the action %s, then it matches: %s', (pattern, action, expected) => {
    expect(actionMatches(pattern, action)).toBe(expected);
  });
});

describe('resource patterns', () => {
  it.each([
    ['acct:123', 'acct:123', true],
    ['acct:123', 'acct:1234', false],
    ['*', '/any/thing', true],
    ['acct:*', 'acct:123', true],
    ['/invoices/*', '/invoices/inv_1', true],
    ['/invoices/*', '/invoices/inv_1/lines/2', true],
    ['/invoices/*', '/receipts/1', false],
    ['acct_*', 'acct_42', true],
    ['/invoices/*/lines', '/invoices/1/lines', false],
  ])('when the pattern is %s and the resource %s, then it matches: %s', (pattern, resource, expected) => {
    expect(resourceMatches(pattern, resource)).toBe(expected);
  });
});

describe('determinism', () => {
  const mandate = buildMandate({ scope: payments });
  const input: VerifyInput = {
    mandate_id: mandate.id,
    action: 'payments:create',
    resource: 'acct:123',
    amount: 500,
    currency: 'EUR',
  };

  it('when the same input is decided twice, then the serialised bodies are byte-identical', () => {
    const a = serialiseDecision(decide(mandate, input, NOW));
    const b = serialiseDecision(decide(mandate, { ...input }, new Date(NOW.getTime() + 60_000)));
    expect(a).toBe(b);
  });

  it('when the input keys come in another order, then the decision_id is the same', () => {
    const reordered: VerifyInput = {
      currency: 'EUR',
      amount: 500,
      resource: 'acct:123',
      action: 'payments:create',
      mandate_id: mandate.id,
    };
    expect(decide(mandate, reordered, NOW).decision_id).toBe(decide(mandate, input, NOW).decision_id);
  });

  it('when the body is serialised, then the keys come in the fixed order', () => {
    const body = serialiseDecision(decide(mandate, input, NOW));
    expect(Object.keys(JSON.parse(body))).toEqual([
      'decision',
      'reason',
      'mandate_id',
      'mandate_state',
      'mandate_version',
      'decision_id',
    ]);
  });

  it('when the input differs, then the decision_id differs', () => {
    expect(decide(mandate, { ...input, amount: 501 }, NOW).decision_id).not.toBe(
      decide(mandate, input, NOW).decision_id,
    );
  });

  it('when the mandate has a new version, then the decision_id differs', () => {
    const next = { ...mandate, version: 2 };
    expect(decide(next, input, NOW).decision_id).not.toBe(decide(mandate, input, NOW).decision_id);
  });

  it('when the same mandate id lives in another tenant, then the decision_id differs', () => {
    const other = { ...mandate, tenant_id: 'tnt_other' };
    expect(decide(other, input, NOW).decision_id).not.toBe(decide(mandate, input, NOW).decision_id);
  });
});
