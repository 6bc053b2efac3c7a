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

type MandateOverrides = Parameters<typeof buildMandate>[0];

interface Case {
  name: string;
  mandate: MandateOverrides;
  input: Partial<VerifyInput>;
  reason: Reason;
  state?: string;
}

/**
 * One case per row: [when, the request beyond mandate_id and action payments:create, the reason,
 * the state reported (ACTIVE unless named)]. The fields are named once here, not in every row.
 */
type Row = [name: string, input: Partial<VerifyInput>, reason: Reason, state?: string];

/** The rows decided against a mandate built from `mandate`. */
const against = (mandate: MandateOverrides, rows: Row[]): Case[] =>
  rows.map(([name, input, reason, state]) => ({ name, mandate, input, reason, state }));

const verifiedPrincipal = (assurance: string) =>
  ({
    principal: {
      id: 'alice',
      verified: { method: 'openid4vp', assurance, verification_id: 'idv_x', issuer: 'https://pid.example' },
    },
  }) as MandateOverrides;

// Rows marked "(order)" fail two checks: the earlier check wins whatever else fails.
const cases: Case[] = [
  // The mandate's own state and dates, whatever the request.
  ...against({ state: 'SUSPENDED' }, [
    ['the mandate is suspended', {}, 'MANDATE_SUSPENDED', 'SUSPENDED'],
    [
      'suspended with a wrong delegate (order)',
      { delegate_id: 'agent_eve' },
      'MANDATE_SUSPENDED',
      'SUSPENDED',
    ],
  ]),
  ...against({ state: 'REVOKED' }, [['the mandate is revoked', {}, 'MANDATE_REVOKED', 'REVOKED']]),
  ...against({ state: 'EXPIRED', expires_at: PAST }, [
    ['the mandate is stored EXPIRED', {}, 'MANDATE_EXPIRED', 'EXPIRED'],
  ]),
  ...against({ expires_at: PAST }, [
    ['a stored ACTIVE mandate is past expires_at', {}, 'MANDATE_EXPIRED', 'EXPIRED'],
    [
      'expired with an action not permitted (order)',
      { action: 'transfers:create' },
      'MANDATE_EXPIRED',
      'EXPIRED',
    ],
  ]),
  ...against({ expires_at: NOW.toISOString() }, [
    ['expires_at is exactly now', {}, 'MANDATE_EXPIRED', 'EXPIRED'],
  ]),
  ...against({ state: 'SUSPENDED', expires_at: PAST }, [
    ['a stored SUSPENDED mandate is past expires_at', {}, 'MANDATE_EXPIRED', 'EXPIRED'],
  ]),
  ...against({ state: 'REVOKED', expires_at: PAST }, [
    ['a revoked mandate is past expires_at', {}, 'MANDATE_REVOKED', 'REVOKED'],
  ]),
  ...against({ valid_from: FUTURE }, [
    ['valid_from is in the future', {}, 'MANDATE_NOT_YET_VALID', 'ACTIVE'],
    ['not yet valid with a wrong delegate (order)', { delegate_id: 'agent_eve' }, 'MANDATE_NOT_YET_VALID'],
  ]),
  ...against({ valid_from: NOW.toISOString() }, [['valid_from is exactly now', {}, 'OK']]),
  ...against({ expires_at: null }, [['there is no expiry at all', {}, 'OK']]),

  // The principal's wallet verification against min_assurance.
  ...against(verifiedPrincipal('HIGH'), [
    ['min_assurance HIGH and the principal is wallet-verified HIGH', { min_assurance: 'HIGH' }, 'OK'],
  ]),
  ...against(verifiedPrincipal('SUBSTANTIAL'), [
    [
      'min_assurance HIGH and the principal is verified at a lower level',
      { min_assurance: 'HIGH' },
      'ASSURANCE_TOO_LOW',
    ],
  ]),
  ...against(verifiedPrincipal('SOMETHING'), [
    [
      'min_assurance HIGH and the principal carries an unknown level',
      { min_assurance: 'HIGH' },
      'ASSURANCE_TOO_LOW',
    ],
  ]),

  // The factory's mandate: payments:* for agent_bob, no resources, no constraints.
  ...against({}, [
    [
      'min_assurance is asked and the principal is not wallet-verified',
      { min_assurance: 'HIGH' },
      'PRINCIPAL_NOT_VERIFIED',
    ],
    ['the delegate differs', { delegate_id: 'agent_eve' }, 'DELEGATE_MISMATCH'],
    ['the delegate matches', { delegate_id: 'agent_bob' }, 'OK'],
    ['the action is outside the scope', { action: 'transfers:create' }, 'ACTION_NOT_PERMITTED'],
    ['a currency is given and the mandate has none', { amount: 5, currency: 'JPY' }, 'OK'],
    ['an amount is given and the mandate has no limit', { amount: 10 ** 12 }, 'OK'],
    [
      'wrong delegate and action not permitted (order)',
      { delegate_id: 'agent_eve', action: 'x' },
      'DELEGATE_MISMATCH',
    ],
  ]),

  // The payments mandate: two resources, at most 10 000 EUR.
  ...against({ scope: payments }, [
    ['everything matches', { resource: 'acct:123', amount: 10_000, currency: 'EUR' }, 'OK'],
    ['the resource is outside the scope', { resource: 'acct:999' }, 'RESOURCE_NOT_PERMITTED'],
    ['the mandate lists resources and the request names none', {}, 'RESOURCE_NOT_PERMITTED'],
    ['the currency differs', { resource: 'acct:123', amount: 1, currency: 'USD' }, 'CURRENCY_MISMATCH'],
    ['an amount comes without a currency', { resource: 'acct:123', amount: 1 }, 'CURRENCY_MISMATCH'],
    [
      'a currency comes without an amount and the mandate has a limit',
      { resource: 'acct:123', currency: 'USD' },
      'AMOUNT_REQUIRED',
    ],
    [
      'neither amount nor currency is given and the mandate has a limit',
      { resource: 'acct:123' },
      'AMOUNT_REQUIRED',
    ],
    [
      'the amount exceeds the limit',
      { resource: 'acct:123', amount: 10_001, currency: 'EUR' },
      'AMOUNT_EXCEEDS_LIMIT',
    ],
    ['resource missing and amount missing (order)', {}, 'RESOURCE_NOT_PERMITTED'],
    ['amount missing and currency missing (order)', { resource: 'acct:123' }, 'AMOUNT_REQUIRED'],
    [
      'action and resource not permitted (order)',
      { action: 'x', resource: 'acct:999' },
      'ACTION_NOT_PERMITTED',
    ],
    [
      'resource not permitted and currency differs (order)',
      { resource: 'acct:999', amount: 1, currency: 'USD' },
      'RESOURCE_NOT_PERMITTED',
    ],
    [
      'currency differs and amount too high (order)',
      { resource: 'acct:123', amount: 99_999, currency: 'USD' },
      'CURRENCY_MISMATCH',
    ],
  ]),

  // Other scopes.
  ...against({ scope: { actions: [] } }, [['the mandate lists no actions', {}, 'ACTION_NOT_PERMITTED']]),
  ...against({ scope: { actions: ['*'] } }, [
    ['the mandate lists no resources', { resource: 'anything/at/all' }, 'OK'],
  ]),
  // Mandates store resource patterns in NFC; a request may spell the same characters decomposed.
  ...against({ scope: { actions: ['*'], resources: ['caf\u00e9/*'] } }, [
    ['the resource is the composed form of a listed prefix', { resource: 'caf\u00e9/1' }, 'OK'],
    ['the resource is the decomposed form of a listed prefix', { resource: 'cafe\u0301/1' }, 'OK'],
  ]),
  ...against({ scope: { actions: ['*'], resources: ['cafe*'] } }, [
    [
      'a decomposed "é" would start with a listed ASCII prefix (decided as its composed form)',
      { resource: 'cafe\u0301s' },
      'RESOURCE_NOT_PERMITTED',
    ],
    ['the composed form of that resource', { resource: 'caf\u00e9s' }, 'RESOURCE_NOT_PERMITTED'],
  ]),
  ...against({ scope: { actions: ['*'], resources: [] } }, [
    [
      'a stored mandate has an empty resource list (fail closed)',
      { resource: 'x' },
      'RESOURCE_NOT_PERMITTED',
    ],
    [
      'a stored mandate has an empty resource list and the request names none (fail closed)',
      {},
      'RESOURCE_NOT_PERMITTED',
    ],
  ]),
  ...against({ scope: { actions: ['*'], constraints: { max_amount: 100 } } }, [
    ['no amount is given and the limit is the only constraint', {}, 'AMOUNT_REQUIRED'],
  ]),
  ...against({ scope: { actions: ['*'], constraints: { currency: 'EUR' } } }, [
    ['no currency is given and the mandate names one (no limit)', {}, 'CURRENCY_MISMATCH'],
    ['the currency matches and the mandate has no limit', { currency: 'EUR' }, 'OK'],
  ]),
  ...against({ scope: { actions: ['*'], constraints: { max_amount: 0 } } }, [
    ['a limit without currency is exceeded', { amount: 1 }, 'AMOUNT_EXCEEDS_LIMIT'],
  ]),
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

// Both matchers answer the same question (does this pattern cover this name?), so one table holds
// the cases of each: [which matcher, pattern, name, whether the pattern covers the name].
const matchers = { action: actionMatches, resource: resourceMatches };
const patternCases: [kind: keyof typeof matchers, pattern: string, name: string, matches: boolean][] = [
  ['action', 'payments:create', 'payments:create', true],
  ['action', 'payments:create', 'payments:refund', false],
  ['action', '*', 'anything:at:all', true],
  ['action', 'payments:*', 'payments:create', true],
  ['action', 'payments:*', 'payments:refund:partial', true],
  ['action', 'payments:*', 'payments', false],
  ['action', 'payments:*', 'paymentsx:create', false],
  ['action', 'payments:refund:*', 'payments:refund:partial', true],
  ['action', 'payments:refund:*', 'payments:create', false],
  ['action', 'Payments:create', 'payments:create', false],
  ['action', 'payments*', 'payments:create', false],
  ['action', 'pay*:create', 'payments:create', false],
  ['resource', 'acct:123', 'acct:123', true],
  ['resource', 'acct:123', 'acct:1234', false],
  ['resource', '*', '/any/thing', true],
  ['resource', 'acct:*', 'acct:123', true],
  ['resource', '/invoices/*', '/invoices/inv_1', true],
  ['resource', '/invoices/*', '/invoices/inv_1/lines/2', true],
  ['resource', '/invoices/*', '/receipts/1', false],
  ['resource', 'acct_*', 'acct_42', true],
  ['resource', '/invoices/*/lines', '/invoices/1/lines', false],
];

describe('action and resource patterns', () => {
  it.each(patternCases)(
    'when the %s pattern is %s and the name %s, then it matches: %s',
    (kind, pattern, name, expected) => {
      expect(matchers[kind](pattern, name)).toBe(expected);
    },
  );
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
