import { decide } from '../src/domain/decide';
import { buildMandate, NOW } from './factories';

/** Verify's read-only budget check (docs/API.md#budgets): after AMOUNT_EXCEEDS_LIMIT, against what is available now. */
describe('verify and a budget', () => {
  const mandate = buildMandate({
    scope: {
      actions: ['payments:*'],
      constraints: { max_amount: 10_000, currency: 'EUR' },
      budget: { amount: 50_000, period: 'month', timezone: 'Europe/Berlin' },
    },
  });
  const input = { mandate_id: mandate.id, action: 'payments:create', currency: 'EUR' };

  it('when the amount fits what is available, then ALLOW; when it does not, then BUDGET_EXCEEDED', () => {
    expect(decide(mandate, { ...input, amount: 5_000 }, NOW, 5_000).reason).toBe('OK');
    expect(decide(mandate, { ...input, amount: 5_001 }, NOW, 5_000)).toMatchObject({
      decision: 'DENY',
      reason: 'BUDGET_EXCEEDED',
    });
  });

  it('when an earlier check fails too, then that reason comes first (AMOUNT_EXCEEDS_LIMIT before the budget)', () => {
    expect(decide(mandate, { ...input, amount: 10_001 }, NOW, 0).reason).toBe('AMOUNT_EXCEEDS_LIMIT');
    expect(decide(mandate, { ...input, amount: 1, currency: 'USD' }, NOW, 0).reason).toBe(
      'CURRENCY_MISMATCH',
    );
  });

  it('when what is available is unknown (offline), then the budget is not decided', () => {
    expect(decide(mandate, { ...input, amount: 9_000 }, NOW).reason).toBe('OK');
  });

  it('when the mandate has no budget, then an available amount changes nothing', () => {
    const plain = buildMandate({ scope: { actions: ['*'] } });
    expect(decide(plain, { mandate_id: plain.id, action: 'x', amount: 9 }, NOW, 0).reason).toBe('OK');
  });
});
