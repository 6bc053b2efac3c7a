import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  REASON_CODES,
  reasonInWords,
  reasonSentence,
  type ReasonCode,
  type ReasonFacts,
} from '@mandate/verifier/decide';

const API_MD = path.resolve(__dirname, '../../docs/API.md');

/** The mandate docs/API.md#reasons-in-words compares with (its paragraph above the table describes it). */
const MANDATE: NonNullable<ReasonFacts['mandate']> = {
  principal: { verified: { assurance: 'SUBSTANTIAL' } },
  delegate: { id: 'agent_42' },
  scope: {
    actions: ['payments:*', 'refunds:read'],
    resources: ['acct:1', 'acct:2/*'],
    constraints: { max_amount: 50000, currency: 'EUR' },
    budget: { amount: 200000, period: 'month' },
  },
  valid_from: '2027-01-01T00:00:00.000Z',
  expires_at: '2026-12-31T23:59:59.000Z',
};
const BUDGET = { available: 40000, currency: 'EUR', period: 'month' };

/** Each example's request: one that fails that reason's check against MANDATE. */
const ASKED: Record<ReasonCode, NonNullable<ReasonFacts['request']>> = {
  OK: { action: 'payments:create' },
  MANDATE_SUSPENDED: {},
  MANDATE_REVOKED: {},
  MANDATE_EXPIRED: {},
  MANDATE_NOT_YET_VALID: {},
  DELEGATE_MISMATCH: { delegate_id: 'agent_9' },
  PRINCIPAL_NOT_VERIFIED: { min_assurance: 'HIGH' },
  ASSURANCE_TOO_LOW: { min_assurance: 'HIGH' },
  ACTION_NOT_PERMITTED: { action: 'transfers:create' },
  RESOURCE_NOT_PERMITTED: { action: 'payments:create', resource: 'acct:3' },
  AMOUNT_REQUIRED: { action: 'payments:create' },
  CURRENCY_MISMATCH: { amount: 1000, currency: 'USD' },
  AMOUNT_EXCEEDS_LIMIT: { amount: 120000, currency: 'EUR' },
  BUDGET_EXCEEDED: { amount: 40001, currency: 'EUR' },
  MANDATE_NOT_FOUND: { mandate_id: 'mdt_unknown' },
};

/** A reason's example: its sentence with the comparison, or "—" where it compares nothing. */
const exampleOf = (code: ReasonCode) => {
  const compared = reasonInWords(code, { request: ASKED[code], mandate: MANDATE, budget: BUDGET });
  return compared === reasonSentence(code) ? '—' : compared;
};

/** The table's rows as the catalogue gives them, in its order. */
const catalogueRows = () =>
  REASON_CODES.map((code) => `| \`${code}\` | ${reasonSentence(code)} | ${exampleOf(code)} |`);

/** The rows of docs/API.md's table under "### Reasons in words". */
function documentedRows(markdown: string): string[] {
  const section = markdown.split('\n### Reasons in words\n')[1]?.split('\n#')[0];
  if (section === undefined) throw new Error('docs/API.md: no "### Reasons in words" section');
  return section.split('\n').filter((line) => line.startsWith('| `'));
}

describe("docs/API.md's reasons in words", () => {
  it("when docs/API.md's table is read, then each reason's sentence and example are the catalogue's, in its order", () => {
    expect(documentedRows(readFileSync(API_MD, 'utf8'))).toEqual(catalogueRows());
  });

  it('when a sentence of the table differs from the catalogue, or a reason is missing, then the check sees it', () => {
    const table = catalogueRows().join('\n');
    const doc = (rows: string) =>
      `# API\n\n### Reasons in words\n\n| Reason | In words |\n| --- | --- |\n${rows}\n\n## Next\n`;
    expect(documentedRows(doc(table))).toEqual(catalogueRows());
    const reworded = table.replace(reasonSentence('AMOUNT_EXCEEDS_LIMIT'), 'Reworded by hand.');
    expect(documentedRows(doc(reworded))).not.toEqual(catalogueRows());
    const shortened = catalogueRows().slice(1).join('\n');
    expect(documentedRows(doc(shortened))).not.toEqual(catalogueRows());
    expect(() => documentedRows('# no such section')).toThrow('no "### Reasons in words" section');
  });
});
