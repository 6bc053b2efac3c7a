import { validationMessage } from '@mandate/shared/testing';
import { onboardingRequestBody, rejectOnboardingBody } from '../src/contract';

const request = (use_case: string) => ({
  organization_name: 'Acme',
  contact_email: 'ops@acme.example',
  use_case,
});
const UNPRINTABLE = 'must contain printable characters only (no control, format or bidi characters)';

describe('onboarding free text (docs/API.md, "Hardening")', () => {
  it.each(['pay\u202eroll', 'agents\u0000', 'zero\u200bwidth', '\u001b[31mred'])(
    'when use_case holds %j, then 400 naming it',
    (bad) => {
      expect(validationMessage(onboardingRequestBody, request(bad))).toBe(`use_case: ${UNPRINTABLE}`);
    },
  );

  it('when use_case is typed decomposed, then it is kept in NFC', () => {
    expect(onboardingRequestBody.parse(request('Zahlungen fu\u0308r Agenten')).use_case).toBe(
      'Zahlungen f\u00fcr Agenten',
    );
  });

  it.each(['spam\u202e', 'x\u0007'])('when a rejection reason holds %j, then 400 naming it', (bad) => {
    expect(validationMessage(rejectOnboardingBody, { reason: bad })).toBe(`reason: ${UNPRINTABLE}`);
  });
});
