import { compactVerify, importJWK, SignJWT, type JWK } from 'jose';
import {
  parseTrustedIssuers,
  resolveIssuerKey,
  TrustedIssuersConfigError,
  UntrustedIssuerError,
} from '../../src/identity-verifications/trusted-issuers';
import {
  testIssuerTrust,
  TEST_PID_ISSUER_TRUST,
  TEST_PID_ISSUER_URL,
} from '../../src/identity-verifications/test-issuer-trust';
import { createTestPidIssuer, DEFAULT_TEST_ISSUER_SEED } from '@mandate/test-wallet';
import { x509 } from '../../src/identity-verifications/x509';
import { buildCa, buildLeaf } from './certificates';

const der = (cert: x509.X509Certificate) => Buffer.from(cert.rawData).toString('base64');

describe('parseTrustedIssuers', () => {
  it('when the variable is unset or blank, then no issuer is trusted', () => {
    expect(parseTrustedIssuers(undefined)).toEqual([]);
    expect(parseTrustedIssuers('  ')).toEqual([]);
  });

  it('when jwks and x5c_anchors entries are given, then both are parsed', async () => {
    const issuer = await createTestPidIssuer();
    const ca = await buildCa('PID CA');
    const raw = JSON.stringify([
      issuer.trustEntry,
      { issuer: 'https://pid.example', x5c_anchors: [ca.cert.toString('pem')] },
    ]);
    const entries = parseTrustedIssuers(raw);
    expect(entries.map((e) => e.issuer)).toEqual([issuer.issuer, 'https://pid.example']);
  });

  it('when an issuer appears twice, then the configuration is refused naming it', async () => {
    const issuer = await createTestPidIssuer();
    expect(() => parseTrustedIssuers(JSON.stringify([issuer.trustEntry, issuer.trustEntry]))).toThrow(
      /\[1\]\.\[issuer\]: duplicate issuer https:\/\/test-pid-issuer\.invalid/,
    );
  });

  it('when the JSON is broken, an entry has both or neither kind of key, or an anchor is no certificate, then refused', () => {
    expect(() => parseTrustedIssuers('[')).toThrow(TrustedIssuersConfigError);
    expect(() => parseTrustedIssuers(JSON.stringify([{ issuer: 'x' }]))).toThrow(TrustedIssuersConfigError);
    expect(() =>
      parseTrustedIssuers(
        JSON.stringify([{ issuer: 'x', jwks: { keys: [{ kty: 'EC' }] }, x5c_anchors: ['a'] }]),
      ),
    ).toThrow(TrustedIssuersConfigError);
    const bogusPem = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----';
    expect(() => parseTrustedIssuers(JSON.stringify([{ issuer: 'x', x5c_anchors: [bogusPem] }]))).toThrow(
      /x5c_anchors\[0\] is not a certificate/,
    );
  });
});

describe('resolveIssuerKey', () => {
  const now = new Date();

  it('when the kid names a key of the issuer entry, then that key; an unknown kid or issuer is untrusted', async () => {
    const issuer = await createTestPidIssuer();
    const entries = [issuer.trustEntry];
    expect((await resolveIssuerKey(entries, issuer.issuer, { kid: issuer.kid }, now)).jwk).toEqual(
      issuer.publicJwk,
    );
    expect((await resolveIssuerKey(entries, issuer.issuer, {}, now)).jwk).toEqual(issuer.publicJwk);
    await expect(resolveIssuerKey(entries, issuer.issuer, { kid: 'other' }, now)).rejects.toThrow(
      UntrustedIssuerError,
    );
    await expect(
      resolveIssuerKey(entries, 'https://other.example', { kid: issuer.kid }, now),
    ).rejects.toThrow(UntrustedIssuerError);
  });

  it('when the x5c chain leads to an anchor, then the leaf key verifies what the leaf signed', async () => {
    const ca = await buildCa('PID CA');
    const leaf = await buildLeaf(ca);
    const entries = parseTrustedIssuers(
      JSON.stringify([{ issuer: 'https://pid.example', x5c_anchors: [ca.cert.toString('pem')] }]),
    );
    const jwt = await new SignJWT({ iss: 'https://pid.example' })
      .setProtectedHeader({ alg: 'ES256', x5c: [der(leaf.cert)] })
      .sign(leaf.keys.privateKey as unknown as Parameters<SignJWT['sign']>[0]);
    const { jwk } = await resolveIssuerKey(entries, 'https://pid.example', { x5c: [der(leaf.cert)] }, now);
    await expect(compactVerify(jwt, await importJWK(jwk as JWK, 'ES256'))).resolves.toBeDefined();
    // The anchor itself may travel at the end of the chain.
    await expect(
      resolveIssuerKey(entries, 'https://pid.example', { x5c: [der(leaf.cert), der(ca.cert)] }, now),
    ).resolves.toEqual({ issuer: 'https://pid.example', jwk });
  });

  it('when the chain leads to another CA, has no x5c, or a certificate expired, then untrusted', async () => {
    const ca = await buildCa('PID CA');
    const rogueCa = await buildCa('Rogue CA');
    const rogueLeaf = await buildLeaf(rogueCa);
    // Expired as of `now` (set when the file loaded, maybe seconds ago), not of this moment.
    const expiredLeaf = await buildLeaf(ca, new Date(now.getTime() - 60_000));
    const entries = parseTrustedIssuers(
      JSON.stringify([{ issuer: 'https://pid.example', x5c_anchors: [ca.cert.toString('pem')] }]),
    );
    for (const header of [
      { x5c: [der(rogueLeaf.cert)] },
      {},
      { x5c: [der(expiredLeaf.cert)] },
      { x5c: ['!!'] },
    ]) {
      await expect(resolveIssuerKey(entries, 'https://pid.example', header, now)).rejects.toThrow(
        UntrustedIssuerError,
      );
    }
  });

  it('when an intermediate that is not a CA signs the leaf, then untrusted', async () => {
    const ca = await buildCa('PID CA');
    const notCa = await buildLeaf(ca);
    const leaf = await buildLeaf({ keys: notCa.keys, cert: notCa.cert });
    const entries = parseTrustedIssuers(
      JSON.stringify([{ issuer: 'https://pid.example', x5c_anchors: [ca.cert.toString('pem')] }]),
    );
    await expect(
      resolveIssuerKey(entries, 'https://pid.example', { x5c: [der(leaf.cert), der(notCa.cert)] }, now),
    ).rejects.toThrow(/is not signed by/);
  });
});

describe('testIssuerTrust', () => {
  it('when not in production, then the TEST issuer is trusted next to the configured ones', async () => {
    const test = await createTestPidIssuer();
    const other = await createTestPidIssuer({ issuer: 'https://pid.example' });
    expect(testIssuerTrust([other.trustEntry], test.trustEntry, 'development').map((e) => e.issuer)).toEqual([
      'https://pid.example',
      TEST_PID_ISSUER_URL,
    ]);
  });

  it('when NODE_ENV=production, then the TEST issuer is never trusted, even when configured by its URL', async () => {
    const test = await createTestPidIssuer();
    const other = await createTestPidIssuer({ issuer: 'https://pid.example' });
    expect(
      testIssuerTrust([other.trustEntry, test.trustEntry], test.trustEntry, 'production').map(
        (e) => e.issuer,
      ),
    ).toEqual(['https://pid.example']);
  });

  it('when the TEST issuer issues with the published seed, then identity trusts exactly its URL and public key', async () => {
    const issuer = await createTestPidIssuer({ seed: DEFAULT_TEST_ISSUER_SEED });
    expect(issuer.trustEntry).toEqual(TEST_PID_ISSUER_TRUST);
  });

  it('when two TEST issuers share a seed, then they share a key (so a wallet CLI and embedded mode agree)', async () => {
    const a = await createTestPidIssuer({ seed: 's' });
    const b = await createTestPidIssuer({ seed: 's' });
    const c = await createTestPidIssuer({ seed: 't' });
    expect(a.publicJwk).toEqual(b.publicJwk);
    expect(a.publicJwk).not.toEqual(c.publicJwk);
  });
});
