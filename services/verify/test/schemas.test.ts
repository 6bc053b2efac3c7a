import canonicalize from 'canonicalize';
import { sha256Hex } from '@mandate/shared/core';
import { decisionId, type VerifyInput } from '../src/domain/decide';
import { fastVerifyRequest, parseVerifyRequest, verifyRequestSchema } from '../src/http/schemas';

const ID = 'mdt_01jz8y7x6w5v4t3s2r1q0p9n8m';
const bodies: unknown[] = [
  { mandate_id: ID, action: 'payments:create' },
  { mandate_id: ID, action: 'payments:create', amount: 1200, currency: 'EUR' },
  { currency: 'EUR', amount: 0, action: 'a', mandate_id: 'm', resource: '', delegate_id: '' },
  { mandate_id: ID, action: 'x', resource: 'acct:"quoted"\\ \u2028 ünï', delegate_id: 'agent_\u0000bob' },
  { mandate_id: ID, action: 'x', amount: Number.MAX_SAFE_INTEGER },
  {
    mandate_id: 'm'.repeat(256),
    action: 'a'.repeat(200),
    resource: 'r'.repeat(1024),
    delegate_id: 'd'.repeat(256),
  },
  // What zod alone decides (rejections and edge cases): the fast check must step aside.
  { mandate_id: 'm'.repeat(257), action: 'a' },
  { mandate_id: ID, action: '' },
  { mandate_id: ID, action: 'a', amount: -1 },
  { mandate_id: ID, action: 'a', amount: 1.5 },
  { mandate_id: ID, action: 'a', amount: 2 ** 60 },
  { mandate_id: ID, action: 'a', amount: '12' },
  { mandate_id: ID, action: 'a', currency: 'eur' },
  { mandate_id: ID, action: 'a', extra: 1 },
  { mandate_id: ID, action: 'a', resource: undefined },
  { mandate_id: ID },
  JSON.parse(`{"mandate_id":"${ID}","action":"a","__proto__":{"x":1}}`),
  Object.assign(Object.create({ inherited: 1 }), { mandate_id: ID, action: 'a' }),
  [ID],
  null,
  'text',
];

/** What a call does: the value it returns, or 'throws'. */
function outcomeOf(call: () => unknown): { value: unknown } | 'throws' {
  try {
    return { value: call() };
  } catch {
    return 'throws';
  }
}

describe('parseVerifyRequest', () => {
  it.each(bodies.map((b, i) => [i, b]))(
    'body %i: the fast check answers what zod answers, or steps aside',
    (_i, body) => {
      const zod = verifyRequestSchema.safeParse(body);
      const fast = fastVerifyRequest(body);
      // Stepping aside is undefined; an answer is what zod parsed (undefined when zod refuses), with
      // the same members in the same order (the event carries this object as JSON).
      const stepsAside = fast === undefined;
      expect(fast).toStrictEqual(stepsAside ? undefined : zod.data);
      expect(JSON.stringify(fast)).toBe(stepsAside ? undefined : JSON.stringify(zod.data));
      expect(outcomeOf(() => parseVerifyRequest(body))).toStrictEqual(
        zod.success ? { value: zod.data } : 'throws',
      );
    },
  );

  it('takes the fast way for the common bodies', () => {
    expect(fastVerifyRequest(bodies[0])).toBeDefined();
    expect(fastVerifyRequest(bodies[1])).toBeDefined();
  });
});

describe('resource: no dot segments, no encoded separators (docs/API.md, "Hardening")', () => {
  it.each([
    'acct:123/../999',
    'acct:123/./999',
    '..',
    'acct:123\\..',
    'acct:123%2F999',
    'acct:123%2f999',
    'acct:123%5c999',
    'acct:123/%2E%2E/999',
  ])(
    'when the resource holds %j (a dot segment or an encoded separator), then 400 naming it, on the fast path and through zod alike',
    (resource) => {
      const body = { mandate_id: ID, action: 'payments:create', resource };
      expect(fastVerifyRequest(body)).toBeUndefined();
      expect(() => parseVerifyRequest(body)).toThrow(/^resource: must not contain/);
    },
  );

  it.each(['acct:123/999', 'acct:123/invoices/2026.11', 'a..b', '.hidden/x', 'x/.y', '100%'])(
    'when the resource is %j (no dot segment, no encoded separator), then it takes the fast path',
    (resource) => {
      expect(fastVerifyRequest({ mandate_id: ID, action: 'a', resource })).toEqual({
        mandate_id: ID,
        action: 'a',
        resource,
      });
    },
  );
});

describe('decisionId', () => {
  const mandate = { id: ID, tenant_id: 'tnt_01jz8y7x6w5v4t3s2r1q0p9n8m', version: 7 };
  const inputs: VerifyInput[] = [
    { mandate_id: ID, action: 'payments:create' },
    { mandate_id: ID, action: 'payments:create', amount: 1200, currency: 'EUR' },
    { currency: 'EUR', amount: 0, action: 'a', mandate_id: 'm', resource: '', delegate_id: '' },
    { mandate_id: ID, action: 'x', resource: 'acct:"q"\\ \u2028 ünï 😀', delegate_id: 'agent_\u0000bob' },
    { mandate_id: ID, action: 'x', resource: undefined, amount: undefined },
  ];
  // decision ids are public and stable: the same as with the canonicalize package they were first made with.
  it.each(inputs.map((input, i) => [i, input]))(
    'input %i: the decision_id of the canonical JSON as the canonicalize package writes it',
    (_i, input) => {
      const canonical = canonicalize({
        tenant_id: mandate.tenant_id,
        input,
        mandate_id: mandate.id,
        mandate_version: mandate.version,
      })!;
      expect(decisionId(mandate, input)).toBe(`dec_${sha256Hex(canonical).slice(0, 26)}`);
    },
  );
});
