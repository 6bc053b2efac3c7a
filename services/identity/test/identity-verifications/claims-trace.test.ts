import { canonicalJson, sha256Hex } from '@mandate/shared/core';
import { DEFAULT_PERSON } from '@mandate/test-wallet';
import { answerAndCheck, buildFixture, type Fixture } from './support';

/**
 * docs/WALLET.md#checking-an-answer: nothing derived from the verified claims can be reversed
 * by guessing (the claims digest is keyed, per tenant), and a person's `wallet:` subject id is
 * pairwise: another in each tenant.
 */
describe('identity claims leave no reversible trace', () => {
  let fixture: Fixture;
  beforeAll(async () => {
    fixture = await buildFixture();
  });

  const verified = async (tenantId: string) => {
    const result = await answerAndCheck({ ...fixture, options: { ...fixture.options, tenantId } });
    if (result.status !== 'VERIFIED') throw new Error(`not verified: ${JSON.stringify(result)}`);
    return result;
  };

  it('when the name is known, then guessing birth dates never yields the claims digest (no unkeyed hash)', async () => {
    const result = await verified('tnt_a');
    const { family_name, given_name } = DEFAULT_PERSON;
    // The review's attack: every date of a 130-year span, hashed as the digest used to be made.
    const start = Date.UTC(1900, 0, 1);
    let found: string | undefined;
    for (let day = 0; day < 130 * 366 && !found; day++) {
      const birth_date = new Date(start + day * 86_400_000).toISOString().slice(0, 10);
      if (sha256Hex(canonicalJson({ family_name, given_name, birth_date })) === result.claims_digest)
        found = birth_date;
    }
    expect(found).toBeUndefined();
    expect(result.claims_digest).toMatch(/^[0-9a-f]{64}$/);
  });

  it('when one person verifies in two tenants, then the digest and the wallet: subject id differ; within one tenant they are stable', async () => {
    const a1 = await verified('tnt_a');
    const a2 = await verified('tnt_a');
    const b = await verified('tnt_b');
    expect(a2.subject_id).toBe(a1.subject_id);
    expect(a2.claims_digest).toBe(a1.claims_digest);
    expect(b.subject_id).not.toBe(a1.subject_id);
    expect(b.claims_digest).not.toBe(a1.claims_digest);
    expect(b.subject_id).toMatch(/^wallet:[A-Za-z0-9_-]{43}$/);
  });
});
