import { createHash } from 'node:crypto';
import {
  checkPresentation,
  claimsDigest,
  subjectId,
  type CheckResult,
} from '../../src/identity-verifications/check-presentation';
import { PID_QUERY_ID } from '../../src/identity-verifications/pid-query';
import { createHolderKey, createTestPidIssuer, DEFAULT_PERSON } from '@mandate/test-wallet';
import { answerAndCheck, buildFixture, buildSession, walletAnswer, type Fixture } from './support';
import { exportJWK, SignJWT, importJWK } from 'jose';
import { buildCa, buildLeaf } from './certificates';
import { digest, ES256 } from '@sd-jwt/crypto-nodejs';
import { SDJwtVcInstance } from '@sd-jwt/sd-jwt-vc';

function expectFailed(result: CheckResult, reason: string) {
  expect(result).toEqual(expect.objectContaining({ status: 'FAILED', reason }));
}

/** Rebuilds vp_token around a changed presentation (and re-signs nothing). */
function withPresentation(vpToken: string, change: (presentation: string) => string): string {
  const parsed = JSON.parse(vpToken) as Record<string, string[]>;
  return JSON.stringify({ [PID_QUERY_ID]: [change(parsed[PID_QUERY_ID]![0]!)] });
}

describe('checkPresentation', () => {
  let fixture: Fixture;
  beforeAll(async () => {
    fixture = await buildFixture();
  });

  it('when an honest wallet answers, then VERIFIED HIGH with only the three claims, a keyed subject_id and a claims digest', async () => {
    const result = await answerAndCheck(fixture);
    const claims = {
      family_name: DEFAULT_PERSON.family_name,
      given_name: DEFAULT_PERSON.given_name,
      birth_date: DEFAULT_PERSON.birth_date,
    };
    expect(result).toEqual({
      status: 'VERIFIED',
      assurance: 'HIGH',
      issuer: fixture.issuer.issuer,
      claims,
      subject_id: subjectId(fixture.issuer.issuer, claims, 'test-subject-secret', 'tnt_test'),
      claims_digest: claimsDigest(claims, 'test-subject-secret', 'tnt_test'),
      verified_at: expect.any(String),
    });
    if (result.status !== 'VERIFIED') throw new Error('unreachable');
    expect(result.subject_id).toMatch(/^wallet:[A-Za-z0-9_-]{43}$/);
    expect(result.subject_id).not.toContain(DEFAULT_PERSON.family_name);
    expect(result.claims_digest).toMatch(/^[0-9a-f]{64}$/);
  });

  it("when an honest presentation is given to @sd-jwt/sd-jwt-vc's own verifier, then it passes there too (interop)", async () => {
    const { session, response } = await walletAnswer(fixture);
    const presentation = (JSON.parse(response.vp_token) as Record<string, string[]>)[PID_QUERY_ID]![0]!;
    const verifyIssuer = await ES256.getVerifier(fixture.issuer.publicJwk);
    const reference = new SDJwtVcInstance({
      hasher: digest,
      verifier: verifyIssuer,
      kbVerifier: async (data, signature, payload) =>
        (await ES256.getVerifier((payload.cnf as { jwk: object }).jwk))(data, signature),
    });
    const verified = await reference.verify(presentation, { keyBindingNonce: session.nonce });
    expect(verified.kb?.payload).toEqual(
      expect.objectContaining({ aud: session.clientId, nonce: session.nonce }),
    );
    expect(Object.keys(verified.payload as object)).not.toContain('nationalities');
  });

  it('when the same person answers twice, then the subject_id is the same; another secret gives another one', async () => {
    const a = await answerAndCheck(fixture);
    const b = await answerAndCheck(fixture);
    expect(a.status === 'VERIFIED' && b.status === 'VERIFIED' && a.subject_id === b.subject_id).toBe(true);
    if (a.status !== 'VERIFIED') throw new Error('unreachable');
    expect(subjectId(a.issuer, a.claims, 'other', 'tnt_test')).not.toBe(a.subject_id);
  });

  it('when the credential has a status list entry that is valid, then VERIFIED', async () => {
    const holder = await createHolderKey();
    const credential = await fixture.issuer.issue({ holderJwk: holder.publicJwk, statusIndex: 7 });
    const session = buildSession(fixture.identity);
    const vp_token = await keyBound(selectRequested(credential), holder.privateJwk, session);
    const result = await checkPresentation(session, { state: session.state, vp_token }, fixture.options);
    expect(result.status).toBe('VERIFIED');
  });

  // One test per reason.
  it('when the session expired, then SESSION_EXPIRED', async () => {
    const session = buildSession(fixture.identity, { expiresAt: new Date(Date.now() - 1) });
    expectFailed(await answerAndCheck(fixture, {}, session), 'SESSION_EXPIRED');
  });

  it('when the state is not the session state, then STATE_MISMATCH', async () => {
    expectFailed(await answerAndCheck(fixture, { misbehave: 'wrong_state' }), 'STATE_MISMATCH');
  });

  it('when the session was already answered (replay), then ALREADY_ANSWERED', async () => {
    const { session, response } = await walletAnswer(fixture);
    expect((await checkPresentation(session, response, fixture.options)).status).toBe('VERIFIED');
    const answered = { ...session, answered: true, status: 'VERIFIED' as const };
    expectFailed(await checkPresentation(answered, response, fixture.options), 'ALREADY_ANSWERED');
  });

  it('when a presentation made for one session is replayed into another, then NONCE_MISMATCH', async () => {
    const { response } = await walletAnswer(fixture);
    const other = buildSession(fixture.identity);
    const replayed = { ...response, state: other.state };
    expectFailed(await checkPresentation(other, replayed, fixture.options), 'NONCE_MISMATCH');
  });

  it('when the issuer is not in the trust list, then UNTRUSTED_ISSUER', async () => {
    expectFailed(await answerAndCheck(fixture, { misbehave: 'untrusted_issuer' }), 'UNTRUSTED_ISSUER');
  });

  it('when a trusted issuer URL signs with a key not in its entry, then UNTRUSTED_ISSUER', async () => {
    const impostor = await createTestPidIssuer({ issuer: fixture.issuer.issuer });
    expectFailed(await answerAndCheck(fixture, { issuer: impostor }), 'UNTRUSTED_ISSUER');
  });

  it('when the issuer signature is broken, then BAD_SIGNATURE', async () => {
    const { session, response } = await walletAnswer(fixture);
    const vp_token = withPresentation(response.vp_token, (p) => {
      const [jwt, ...rest] = p.split('~');
      const [h, b, s] = jwt!.split('.');
      const sig = Buffer.from(s!, 'base64url');
      sig[0] = sig[0]! ^ 0xff;
      return [[h, b, sig.toString('base64url')].join('.'), ...rest].join('~');
    });
    expectFailed(
      await checkPresentation(session, { ...response, vp_token }, fixture.options),
      'BAD_SIGNATURE',
    );
  });

  it('when the credential is not a PID (vct), then WRONG_CREDENTIAL_TYPE', async () => {
    expectFailed(await answerAndCheck(fixture, { misbehave: 'wrong_vct' }), 'WRONG_CREDENTIAL_TYPE');
  });

  it('when vp_token does not answer the pid query, then WRONG_CREDENTIAL_TYPE', async () => {
    const { session, response } = await walletAnswer(fixture);
    const vp_token = JSON.stringify({ other: JSON.parse(response.vp_token)[PID_QUERY_ID] });
    expectFailed(
      await checkPresentation(session, { ...response, vp_token }, fixture.options),
      'WRONG_CREDENTIAL_TYPE',
    );
    expectFailed(
      await checkPresentation(session, { ...response, vp_token: 'x' }, fixture.options),
      'WRONG_CREDENTIAL_TYPE',
    );
  });

  it('when a disclosure was tampered with, then DISCLOSURE_MISMATCH', async () => {
    const result = await answerAndCheck(fixture, { misbehave: 'tampered_disclosure' });
    expectFailed(result, 'DISCLOSURE_MISMATCH');
    expect(result).toEqual(expect.objectContaining({ detail: expect.stringContaining('not referenced') }));
  });

  it('when a requested claim is withheld, then DISCLOSURE_MISMATCH', async () => {
    const result = await rebindWithout(fixture, buildSession(fixture.identity), 1);
    expectFailed(result, 'DISCLOSURE_MISMATCH');
    expect(result).toEqual(expect.objectContaining({ detail: expect.stringContaining('is not disclosed') }));
  });

  it('when more than the requested claims are disclosed, then DISCLOSURE_MISMATCH', async () => {
    const holder = await createHolderKey();
    const credential = await fixture.issuer.issue({ holderJwk: holder.publicJwk });
    const session = buildSession(fixture.identity);
    // Every disclosure, nationalities and birth_place included, properly key-bound.
    const result = await checkPresentation(
      session,
      { state: session.state, vp_token: await keyBound(credential, holder.privateJwk, session) },
      fixture.options,
    );
    expectFailed(result, 'DISCLOSURE_MISMATCH');
    expect(result).toEqual(expect.objectContaining({ detail: expect.stringContaining('nationalities') }));
  });

  it('when the credential expired, then CREDENTIAL_EXPIRED', async () => {
    expectFailed(await answerAndCheck(fixture, { misbehave: 'expired' }), 'CREDENTIAL_EXPIRED');
  });

  it('when the credential is not yet valid (nbf), then CREDENTIAL_EXPIRED', async () => {
    const holder = await createHolderKey();
    const credential = await fixture.issuer.issue({
      holderJwk: holder.publicJwk,
      nbf: Math.floor(Date.now() / 1000) + 3600,
    });
    const session = buildSession(fixture.identity);
    const vp_token = await keyBound(selectRequested(credential), holder.privateJwk, session);
    expectFailed(
      await checkPresentation(session, { state: session.state, vp_token }, fixture.options),
      'CREDENTIAL_EXPIRED',
    );
  });

  it('when the status list marks the credential, then CREDENTIAL_REVOKED', async () => {
    const result = await answerAndCheck(fixture, { misbehave: 'revoked' });
    expectFailed(result, 'CREDENTIAL_REVOKED');
    expect(result).toEqual(expect.objectContaining({ detail: 'status is 1' }));
  });

  it('when the status list cannot be fetched, then CREDENTIAL_REVOKED (fails closed)', async () => {
    const { session, response } = await walletAnswer(fixture, { misbehave: 'revoked' });
    const options = { ...fixture.options, fetchStatusList: async () => Promise.reject(new Error('down')) };
    expectFailed(await checkPresentation(session, response, options), 'CREDENTIAL_REVOKED');
  });

  it('when the key-binding nonce is not the session nonce, then NONCE_MISMATCH', async () => {
    expectFailed(await answerAndCheck(fixture, { misbehave: 'wrong_nonce' }), 'NONCE_MISMATCH');
  });

  it('when the key-binding aud is another verifier, then AUDIENCE_MISMATCH', async () => {
    expectFailed(await answerAndCheck(fixture, { misbehave: 'wrong_audience' }), 'AUDIENCE_MISMATCH');
  });

  it('when the key-binding JWT is signed by another key than cnf, then KEY_BINDING_INVALID', async () => {
    expectFailed(await answerAndCheck(fixture, { misbehave: 'bad_kb_signature' }), 'KEY_BINDING_INVALID');
  });

  it('when the key-binding JWT is missing, then KEY_BINDING_INVALID', async () => {
    const { session, response } = await walletAnswer(fixture);
    const vp_token = withPresentation(response.vp_token, (p) => p.slice(0, p.lastIndexOf('~') + 1));
    expectFailed(
      await checkPresentation(session, { ...response, vp_token }, fixture.options),
      'KEY_BINDING_INVALID',
    );
  });

  it('when the key-binding iat is stale, then KEY_BINDING_INVALID', async () => {
    const { session, response } = await walletAnswer(fixture, { now: new Date(Date.now() - 3600_000) });
    const result = await checkPresentation(session, response, fixture.options);
    expectFailed(result, 'KEY_BINDING_INVALID');
    expect(result).toEqual(expect.objectContaining({ detail: 'key-binding iat is not fresh' }));
  });

  it('when the disclosures are reordered after key binding (sd_hash), then KEY_BINDING_INVALID', async () => {
    const { session, response } = await walletAnswer(fixture);
    const vp_token = withPresentation(response.vp_token, (p) => {
      const [jwt, a, b, c, ...rest] = p.split('~');
      return [jwt, c, b, a, ...rest].join('~');
    });
    const result = await checkPresentation(session, { ...response, vp_token }, fixture.options);
    expectFailed(result, 'KEY_BINDING_INVALID');
    expect(result).toEqual(expect.objectContaining({ detail: expect.stringContaining('sd_hash') }));
  });
});

// Helpers that build presentations by hand, for the cases the wallet has no misbehaviour for.

function selectRequested(credential: string): string {
  const [jwt, ...disclosures] = credential.split('~').filter((p) => p !== '');
  const wanted = disclosures.filter((d) => {
    const [, name] = JSON.parse(Buffer.from(d, 'base64url').toString('utf8')) as [string, string];
    return ['family_name', 'given_name', 'birth_date'].includes(name);
  });
  return [jwt, ...wanted].join('~') + '~';
}

async function keyBound(
  presented: string,
  holderPrivateJwk: object,
  session: { nonce: string; clientId: string },
) {
  const kb = await new SignJWT({
    iat: Math.floor(Date.now() / 1000),
    aud: session.clientId,
    nonce: session.nonce,
    sd_hash: createHash('sha256').update(presented, 'ascii').digest('base64url'),
  })
    .setProtectedHeader({ alg: 'ES256', typ: 'kb+jwt' })
    .sign(await importJWK(holderPrivateJwk, 'ES256'));
  return JSON.stringify({ [PID_QUERY_ID]: [presented + kb] });
}

/** Drops one requested disclosure and key-binds what is left properly: only the disclosure check can fail. */
async function rebindWithout(
  fixture: Fixture,
  session: ReturnType<typeof buildSession>,
  index: number,
): Promise<CheckResult> {
  const holder = await createHolderKey();
  const credential = selectRequested(await fixture.issuer.issue({ holderJwk: holder.publicJwk }));
  const parts = credential.split('~');
  parts.splice(index, 1);
  const vp_token = await keyBound(parts.join('~'), holder.privateJwk, session);
  return checkPresentation(session, { state: session.state, vp_token }, fixture.options);
}

describe('checkPresentation with an x5c-anchored issuer', () => {
  it('when the PID is signed by a leaf under a trusted anchor, then VERIFIED; under another anchor, UNTRUSTED_ISSUER', async () => {
    const base = await buildFixture();
    const ca = await buildCa('PID CA');
    const leaf = await buildLeaf(ca);
    const privateJwk = await exportJWK(leaf.keys.privateKey as unknown as Parameters<typeof exportJWK>[0]);
    const issuer = await createTestPidIssuer({
      issuer: 'https://pid.example',
      privateJwk,
      x5c: [Buffer.from(leaf.cert.rawData).toString('base64')],
    });
    const trusted: Fixture = {
      ...base,
      issuer,
      options: {
        ...base.options,
        trustedIssuers: [{ issuer: 'https://pid.example', x5c_anchors: [ca.cert.toString('pem')] }],
      },
    };
    expect(await answerAndCheck(trusted)).toEqual(
      expect.objectContaining({ status: 'VERIFIED', issuer: 'https://pid.example' }),
    );
    const otherCa = await buildCa('Other CA');
    const untrusted: Fixture = {
      ...trusted,
      options: {
        ...trusted.options,
        trustedIssuers: [{ issuer: 'https://pid.example', x5c_anchors: [otherCa.cert.toString('pem')] }],
      },
    };
    expectFailed(await answerAndCheck(untrusted), 'UNTRUSTED_ISSUER');
  });
});
