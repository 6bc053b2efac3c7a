import { validationMessage } from '@mandate/shared/testing';
import { createMandateBody, lifecycleBody } from '../src/contract';

const withResources = (resources: string[]) => ({
  principal: 'user_alice',
  delegate: 'agent_42',
  scope: { actions: ['payments:*'], resources },
});

describe('mandate contract: resource patterns and free text', () => {
  it.each([
    'acct:123/../999',
    'acct:123/./x',
    '../acct',
    'acct:123/..',
    'acct:123\\..\\999',
    'acct:123%2F..%2F999',
    'acct:123%2f999',
    'acct:123%5Cx',
    'acct:123/%2e%2e/999',
  ])(
    'when a resources pattern holds %j (a dot segment or an encoded separator), then 400 naming the field',
    (bad) => {
      expect(validationMessage(createMandateBody, withResources(['acct:1/*', bad]))).toMatch(
        /^scope\.resources\.1: must not contain/,
      );
    },
  );

  it.each([
    'acct:123/．．/999',
    'acct:123/\u2025/*',
    'acct:123/\uFE52/*',
    'acct:123/..／*',
    'acct:123/％2e％2e/*',
  ])(
    'when a resources pattern holds %j (a dot segment once NFKC-normalised), then 400 naming the field',
    (bad) => {
      expect(validationMessage(createMandateBody, withResources([bad]))).toMatch(
        /^scope\.resources\.0: must not contain/,
      );
    },
  );

  it.each(['acct:123/*', 'acct:123/invoices/2026.11', 'files/a..b/c.txt', '.well-known/x', '*', 'acct:100%'])(
    'when a resources pattern is %j, then it is accepted',
    (good) => {
      expect(validationMessage(createMandateBody, withResources([good]))).toBe('accepted');
    },
  );

  it.each(['acct:1/\u202eevil', 'acct:1\u0000', 'acct:\u200b1'])(
    'when a resources pattern holds an unprintable character (%j), then 400',
    (bad) => {
      expect(validationMessage(createMandateBody, withResources([bad]))).toBe(
        'scope.resources.0: must contain printable characters only (no control, format or bidi characters)',
      );
    },
  );

  it('when a resources pattern is typed decomposed, then it is stored in NFC', () => {
    const r = createMandateBody.parse(withResources(['konto:mu\u0308ller/*']));
    expect(r.scope?.resources).toEqual(['konto:m\u00fcller/*']);
  });

  it.each(['fraud\u202e', 'line\nbreak', 'x\u0007'])('when a lifecycle reason holds %j, then 400', (bad) => {
    expect(validationMessage(lifecycleBody, { reason: bad })).toBe(
      'reason: must contain printable characters only (no control, format or bidi characters)',
    );
  });
});
