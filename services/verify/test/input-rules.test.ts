import { fastVerifyRequest, parseVerifyRequest } from '../src/http/schemas';

/**
 * docs/API.md#verify-input-rules: `action` and `resource` printable, and the dot-segment rule on
 * the resource's NFKC form too — a 400 naming the member, on the fast path and through zod alike.
 */
const ID = 'mdt_01jz8y7x6w5v4t3s2r1q0p9n8m';

describe('verify input rules (v4)', () => {
  it.each([
    ['resource', 'acct:123/\u0000'],
    ['resource', 'acct:123/x\ny'],
    ['resource', 'acct:123/\u202Egnp.exe'],
    ['resource', 'acct:123/\u2069'],
    ['resource', 'acct:123/\u0085'],
    ['resource', 'acct:123/\u2028'],
    ['action', 'payments:create\u0000'],
    ['action', 'payments:\u202Ecreate'],
    ['action', 'payments:create\n'],
  ])('when %s holds a control or bidi character (%j), then 400 naming it', (field, value) => {
    const body = { mandate_id: ID, action: 'payments:create', resource: 'acct:123/1', [field]: value };
    expect(fastVerifyRequest(body)).toBeUndefined();
    expect(() => parseVerifyRequest(body)).toThrow(
      new RegExp(`^${field}: must contain printable characters only`),
    );
  });

  it.each([
    'acct:123/．．/999',
    'acct:123/\uFE52/999',
    'acct:123/\u2025/999',
    'acct:123/\u2024./999',
    'acct:123/..／999',
    'acct:123/％2e％2e/999',
  ])('when the resource is %j (a dot segment once NFKC-normalised), then 400 naming it', (resource) => {
    const body = { mandate_id: ID, action: 'payments:create', resource };
    expect(fastVerifyRequest(body)).toBeUndefined();
    expect(() => parseVerifyRequest(body)).toThrow(/^resource: must not contain/);
  });

  it.each(['acct:123/ünï', 'acct:123/a．b', 'acct:123/2026.11', 'konto:Müller/😀'])(
    'when the resource is %j (printable, no dot segment in any form), then it takes the fast path',
    (resource) => {
      expect(fastVerifyRequest({ mandate_id: ID, action: 'a', resource })).toEqual({
        mandate_id: ID,
        action: 'a',
        resource,
      });
    },
  );
});
