import {
  DENY_REASONS,
  REASON_CODES,
  firstFailure,
  formatAmount,
  reasonInWords,
  reasonReads,
  reasonSentence,
  type ReasonCode,
  type ReasonFacts,
} from '../src/decide';

/** A mandate with every fact a comparison reads: a limit, a budget, resources, a verified principal. */
const MANDATE: NonNullable<ReasonFacts['mandate']> = {
  principal: { verified: { assurance: 'SUBSTANTIAL' } },
  delegate: { id: 'agent_42' },
  scope: {
    actions: ['payments:*', 'refunds:read'],
    resources: ['acct:1', 'acct:2/*'],
    constraints: { max_amount: 50000, currency: 'EUR' },
    budget: { amount: 200000, period: 'month' },
  },
  valid_from: '2031-02-01T00:00:00.000Z',
  expires_at: '2030-12-31T23:59:59.000Z',
};

/** Each reason with the facts its comparison needs, and the sentence it must then say. */
const COMPARED: Record<ReasonCode, { facts: ReasonFacts; says: string }> = {
  OK: { facts: { request: { action: 'payments:create' } }, says: 'The mandate allows payments:create now.' },
  MANDATE_SUSPENDED: {
    facts: { mandate: MANDATE },
    says: 'The mandate is suspended: it allows nothing until it is reactivated.',
  },
  MANDATE_REVOKED: {
    facts: { mandate: MANDATE },
    says: 'The mandate is revoked: it allows nothing any more.',
  },
  MANDATE_EXPIRED: { facts: { mandate: MANDATE }, says: 'The mandate expired at 2030-12-31 23:59:59 UTC.' },
  MANDATE_NOT_YET_VALID: {
    facts: { mandate: MANDATE },
    says: 'The mandate is valid only from 2031-02-01 00:00:00 UTC.',
  },
  DELEGATE_MISMATCH: {
    facts: { request: { delegate_id: 'agent_9' }, mandate: MANDATE },
    says: "Delegate agent_9 is not the mandate's delegate agent_42.",
  },
  PRINCIPAL_NOT_VERIFIED: {
    facts: { request: { min_assurance: 'HIGH' } },
    says: "Assurance HIGH was asked, but the principal's identity was not verified.",
  },
  ASSURANCE_TOO_LOW: {
    facts: { request: { min_assurance: 'HIGH' }, mandate: MANDATE },
    says: "Assurance HIGH was asked, but the principal's identity was verified at SUBSTANTIAL.",
  },
  ACTION_NOT_PERMITTED: {
    facts: { request: { action: 'transfers:create' }, mandate: MANDATE },
    says: "Action transfers:create is not among the mandate's actions (payments:*, refunds:read).",
  },
  RESOURCE_NOT_PERMITTED: {
    facts: { request: { action: 'payments:create', resource: 'acct:3' }, mandate: MANDATE },
    says: "Resource acct:3 matches none of the mandate's resources (acct:1, acct:2/*).",
  },
  AMOUNT_REQUIRED: {
    facts: { request: { action: 'payments:create' }, mandate: MANDATE },
    says: 'The mandate limits the amount to 500.00 EUR per call: the request must name one (with its currency).',
  },
  CURRENCY_MISMATCH: {
    facts: { request: { amount: 100, currency: 'USD' }, mandate: MANDATE },
    says: "Currency USD differs from the mandate's currency EUR.",
  },
  AMOUNT_EXCEEDS_LIMIT: {
    facts: { request: { amount: 120000, currency: 'EUR' }, mandate: MANDATE },
    says: "Amount 1,200.00 EUR exceeds the mandate's limit of 500.00 EUR per call.",
  },
  BUDGET_EXCEEDED: {
    facts: {
      request: { amount: 40001, currency: 'EUR' },
      mandate: MANDATE,
      budget: { available: 40000, currency: 'EUR', period: 'month' },
    },
    says: "Amount 400.01 EUR exceeds the 400.00 EUR left of the mandate's budget for this month.",
  },
  MANDATE_NOT_FOUND: {
    facts: { request: { mandate_id: 'mdt_nope' } },
    says: 'No mandate mdt_nope in this tenant.',
  },
};

describe('the reasons in words', () => {
  it("when the catalogue is listed, then it holds OK, every deny reason in the decision's order and AuthZEN's MANDATE_NOT_FOUND", () => {
    expect(REASON_CODES).toEqual(['OK', ...DENY_REASONS, 'MANDATE_NOT_FOUND']);
  });

  it.each(REASON_CODES)('when %s is told with its facts, then its sentence holds the comparison', (code) => {
    expect(reasonInWords(code, COMPARED[code].facts)).toBe(COMPARED[code].says);
  });

  it.each(REASON_CODES)(
    'when %s is told without facts, then it is its plain sentence, whole and ending in a full stop',
    (code) => {
      const plain = reasonInWords(code);
      expect(plain).toBe(reasonSentence(code));
      expect(plain).toMatch(/^[A-Z].{20,}\.$/);
    },
  );

  it.each(REASON_CODES)(
    'when %s is told with only some of its facts, then it is the plain sentence, never one with a hole',
    (code) => {
      const { facts } = COMPARED[code];
      // Each fact alone, then each with the mandate's scope emptied of what is compared.
      const partial: ReasonFacts[] = [
        { request: facts.request },
        { mandate: facts.mandate },
        { budget: facts.budget },
        { ...facts, mandate: { delegate: facts.mandate?.delegate, scope: {} } },
      ];
      for (const some of partial) {
        const said = reasonInWords(code, some);
        expect([reasonSentence(code), COMPARED[code].says]).toContain(said);
        expect(said).not.toMatch(/undefined|null|NaN|\(\)/);
      }
    },
  );

  it('when the mandate names resources and the request none, or a currency and the request none, then the sentence says what was left out', () => {
    expect(reasonInWords('RESOURCE_NOT_PERMITTED', { request: { action: 'a' }, mandate: MANDATE })).toBe(
      'No resource was named, and the mandate allows only its resources (acct:1, acct:2/*).',
    );
    expect(reasonInWords('CURRENCY_MISMATCH', { request: { amount: 1 }, mandate: MANDATE })).toBe(
      "No currency was named, and the mandate's currency is EUR.",
    );
  });

  it("when amounts are formatted, then each currency's minor units decide the digits, with English grouping", () => {
    expect(formatAmount(120000, 'EUR')).toBe('1,200.00 EUR');
    expect(formatAmount(5, 'EUR')).toBe('0.05 EUR');
    expect(formatAmount(120000, 'JPY')).toBe('120,000 JPY');
    expect(formatAmount(1234567, 'KWD')).toBe('1,234.567 KWD');
    expect(formatAmount(0, 'USD')).toBe('0.00 USD');
    expect(
      reasonInWords('AMOUNT_EXCEEDS_LIMIT', {
        request: { amount: 120000, currency: 'JPY' },
        mandate: { scope: { constraints: { max_amount: 50000, currency: 'JPY' } } },
      }),
    ).toBe("Amount 120,000 JPY exceeds the mandate's limit of 50,000 JPY per call.");
  });

  it("when a budget's period is total, a day or a week, then the sentence names it", () => {
    const told = (period: string) =>
      reasonInWords('BUDGET_EXCEEDED', {
        request: { amount: 1000 },
        budget: { available: 999, currency: 'EUR', period },
      });
    expect(told('total')).toBe("Amount 10.00 EUR exceeds the 9.99 EUR left of the mandate's total budget.");
    expect(told('day')).toBe(
      "Amount 10.00 EUR exceeds the 9.99 EUR left of the mandate's budget for this day.",
    );
    expect(told('week')).toBe(
      "Amount 10.00 EUR exceeds the 9.99 EUR left of the mandate's budget for this week.",
    );
    expect(told('fortnight')).toBe(reasonSentence('BUDGET_EXCEEDED'));
  });

  it('when a code is outside the catalogue, then it is answered as itself', () => {
    expect(reasonInWords('SOMETHING_NEWER', { request: { action: 'a' } })).toBe('SOMETHING_NEWER');
    expect(reasonInWords('toString')).toBe('toString');
    expect(reasonReads('toString')).toBeUndefined();
  });

  it('when a caller asks what a comparison reads, then only the budget reason reads the budget and no request-only reason reads the mandate', () => {
    expect(REASON_CODES.filter((c) => reasonReads(c) === 'budget')).toEqual(['BUDGET_EXCEEDED']);
    for (const code of ['OK', 'PRINCIPAL_NOT_VERIFIED', 'MANDATE_NOT_FOUND'] as const)
      expect(reasonReads(code)).toBeUndefined();
    expect(reasonReads('AMOUNT_EXCEEDS_LIMIT')).toBe('mandate');
  });

  it("when the decision denies a request, then the reason's sentence compares what the decision compared", () => {
    const now = new Date('2031-01-15T00:00:00.000Z');
    const mandate = { ...MANDATE, valid_from: null, expires_at: null };
    const request = { action: 'payments:create', resource: 'acct:1', amount: 120000, currency: 'EUR' };
    const reason = firstFailure(
      { ...mandate, delegate: { id: 'agent_42' }, scope: { ...mandate.scope, actions: ['payments:*'] } },
      'ACTIVE',
      request,
      now,
    );
    expect(reason).toBe('AMOUNT_EXCEEDS_LIMIT');
    expect(reasonInWords(reason!, { request, mandate })).toBe(
      "Amount 1,200.00 EUR exceeds the mandate's limit of 500.00 EUR per call.",
    );
  });
});
