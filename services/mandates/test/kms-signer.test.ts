import { createHash } from 'node:crypto';
import {
  GetPublicKeyCommand,
  KMSInternalException,
  KMSServiceException,
  SignCommand,
  type SignCommandInput,
} from '@aws-sdk/client-kms';
import {
  calculateJwkThumbprint,
  compactVerify,
  createLocalJWKSet,
  decodeProtectedHeader,
  type JWK,
} from 'jose';
import { processMetrics } from '@mandate/shared/observability';
import { derToJose } from '../src/signing/der';
import { KmsKeyMisconfigured, KmsSigner, KmsUnavailable } from '../src/signing/kms-signer';
import { EVIDENCE_JWS_TYP } from '../src/signing/signer';
import { makeKmsKey, mockedKms, signAnswer, type TestKmsKey } from './kms-support';

/** KMS does not model these errors: the SDK raises them as KMSServiceException with the wire name, as here. */
const kmsError = (name: string, message: string, httpStatusCode = 400) =>
  new KMSServiceException({ name, message, $fault: 'client', $metadata: { httpStatusCode } });
const throttled = () => kmsError('ThrottlingException', 'Rate exceeded');

/** Records the backoff instead of waiting it out. */
function instantRetry(random = () => 0.5) {
  const delays: number[] = [];
  return { delays, retry: { sleep: async (ms: number) => void delays.push(ms), random } };
}

/** The check any relying party does: the JWS against the published JWKS, nothing else. */
async function verifyWithJwks(jws: string, jwks: JWK[]): Promise<string> {
  const { payload } = await compactVerify(jws, createLocalJWKSet({ keys: jwks }), { algorithms: ['ES256'] });
  return new TextDecoder().decode(payload);
}

describe('KmsSigner through the KMS client (commands mocked with aws-sdk-client-mock)', () => {
  let restore: (() => void)[] = [];
  afterEach(() => {
    for (const r of restore) r();
    restore = [];
  });
  function kmsWith(keys: TestKmsKey[]) {
    const mocked = mockedKms(keys);
    restore.push(() => mocked.kms.restore());
    return mocked;
  }

  /** A key whose KMS refuses Sign `throttles` times with ThrottlingException, then signs. */
  function throttledThenSigning(name: string, throttles: number) {
    const key = makeKmsKey(name);
    const mocked = kmsWith([key]);
    const sign = mocked.kms.on(SignCommand);
    for (let i = 0; i < throttles; i++) sign.rejectsOnce(throttled());
    sign.callsFake(async (input: SignCommandInput) => signAnswer([key], input));
    return { key, ...mocked };
  }

  it('when KMS signs, then the result is a compact ES256 JWS that jose verifies against the published JWKS', async () => {
    const key = makeKmsKey('signing');
    const { client } = kmsWith([key]);
    const signer = new KmsSigner({ client, keyIds: [key.alias] });

    const jws = await signer.sign('{"id":"mdt_1"}');
    const jwks = await signer.publicJwks();
    expect(await verifyWithJwks(jws, jwks)).toBe('{"id":"mdt_1"}');

    const publicJwk = key.publicKey.export({ format: 'jwk' });
    const thumbprint = await calculateJwkThumbprint(
      { kty: 'EC', crv: 'P-256', x: publicJwk.x!, y: publicJwk.y! },
      'sha256',
    );
    expect(jwks).toEqual([
      { kty: 'EC', crv: 'P-256', x: publicJwk.x, y: publicJwk.y, kid: thumbprint, alg: 'ES256', use: 'sig' },
    ]);
    expect(decodeProtectedHeader(jws)).toEqual({ alg: 'ES256', kid: thumbprint });
    expect(signer.kid).toBe(thumbprint);
  });

  it('when signing, then KMS is asked for ECDSA_SHA_256 over the SHA-256 digest of the JWS signing input, by key ARN', async () => {
    const key = makeKmsKey('digest');
    const { client, kms } = kmsWith([key]);
    const signer = new KmsSigner({ client, keyIds: [key.alias] });
    const jws = await signer.sign('payload');

    const [call] = kms.commandCalls(SignCommand);
    const input = call!.args[0].input as SignCommandInput;
    const signingInput = jws.split('.').slice(0, 2).join('.');
    expect(input).toMatchObject({ KeyId: key.arn, MessageType: 'DIGEST', SigningAlgorithm: 'ECDSA_SHA_256' });
    expect(Buffer.from(input.Message!)).toEqual(createHash('sha256').update(signingInput).digest());
  });

  it('when many signatures are made, then GetPublicKey is called once and the key is cached', async () => {
    const key = makeKmsKey('cached');
    const { client, kms } = kmsWith([key]);
    const signer = new KmsSigner({ client, keyIds: [key.keyId] });
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => signer.sign(`p${i}`)));
    await signer.publicJwks();
    const jwks = await signer.publicJwks();
    for (const [i, jws] of results.entries()) expect(await verifyWithJwks(jws, jwks)).toBe(`p${i}`);
    expect(kms.commandCalls(GetPublicKeyCommand)).toHaveLength(1);
    expect(kms.commandCalls(SignCommand)).toHaveLength(10);
  });

  it.each([
    ['r', 'r-leading-zero'],
    ['s', 's-leading-zero'],
  ] as const)(
    'when KMS returns a DER signature whose %s has a leading zero byte, then the JOSE form is padded to 32 bytes and jose verifies it',
    async (_name, shape) => {
      const key = makeKmsKey(shape);
      key.shape = shape;
      const { client, kms } = kmsWith([key]);
      const signer = new KmsSigner({ client, keyIds: [key.keyId] });
      const jws = await signer.sign('leading zero');

      const der = (await kms.commandCalls(SignCommand)[0]!.returnValue) as { Signature: Uint8Array };
      const rLength = der.Signature[3]!;
      const sLength = der.Signature[4 + rLength + 1]!;
      // DER dropped the zero byte: the integer really is short on the wire.
      expect(shape === 'r-leading-zero' ? rLength : sLength).toBeLessThan(32);
      const raw = Buffer.from(jws.split('.')[2]!, 'base64url');
      expect(raw).toHaveLength(64);
      expect(raw[shape === 'r-leading-zero' ? 0 : 32]).toBe(0);
      expect(raw).toEqual(Buffer.from(derToJose(der.Signature)));
      expect(await verifyWithJwks(jws, await signer.publicJwks())).toBe('leading zero');
    },
  );

  it('when a typ is asked for, then it is in the protected header', async () => {
    const key = makeKmsKey('typ');
    const { client } = kmsWith([key]);
    const signer = new KmsSigner({ client, keyIds: [key.keyId] });
    const jws = await signer.sign('a'.repeat(64), { typ: EVIDENCE_JWS_TYP });
    expect(decodeProtectedHeader(jws)).toEqual({ alg: 'ES256', kid: signer.kid, typ: EVIDENCE_JWS_TYP });
  });

  describe('key rotation (SIGNING_KEY_IDS)', () => {
    it('when several keys are listed, then the first signs and all are published, so signatures from before the rotation still verify', async () => {
      const oldKey = makeKmsKey('old');
      const newKey = makeKmsKey('new');
      const { client } = kmsWith([oldKey, newKey]);

      const before = new KmsSigner({ client, keyIds: [oldKey.alias] });
      const signedBefore = await before.sign('signed before the rotation');
      const after = new KmsSigner({ client, keyIds: [newKey.alias, oldKey.alias] });
      const signedAfter = await after.sign('signed after the rotation');

      const jwks = await after.publicJwks();
      expect(jwks.map((k) => k.kid)).toEqual([after.kid, before.kid]);
      expect(after.kid).not.toBe(before.kid);
      expect(decodeProtectedHeader(signedAfter).kid).toBe(after.kid);
      expect(await verifyWithJwks(signedBefore, jwks)).toBe('signed before the rotation');
      expect(await verifyWithJwks(signedAfter, jwks)).toBe('signed after the rotation');
      // And the retired key alone would not check the new signature.
      await expect(verifyWithJwks(signedAfter, await before.publicJwks())).rejects.toThrow();
    });

    it('when the same key is listed under two names, then it is published once', async () => {
      const key = makeKmsKey('twice');
      const { client } = kmsWith([key]);
      const signer = new KmsSigner({ client, keyIds: [key.alias, key.arn] });
      expect(await signer.publicJwks()).toHaveLength(1);
    });
  });

  describe('failures', () => {
    it('when Sign is throttled twice, then it is retried with growing, jittered backoff and succeeds', async () => {
      const { key, client, kms } = throttledThenSigning('throttled', 2);
      const { delays, retry } = instantRetry(() => 0.5);
      const signer = new KmsSigner({ client, keyIds: [key.keyId], retry: { ...retry, baseDelayMs: 100 } });

      const jws = await signer.sign('after throttling');
      expect(await verifyWithJwks(jws, await signer.publicJwks())).toBe('after throttling');
      expect(kms.commandCalls(SignCommand)).toHaveLength(3);
      // half fixed, half random: 50 + 50·0.5, then 100 + 100·0.5
      expect(delays).toEqual([75, 150]);
    });

    it('when the jitter varies, then each delay stays between half and all of its exponential ceiling, capped', async () => {
      const key = makeKmsKey('jitter');
      const { client, kms } = kmsWith([key]);
      kms.on(SignCommand).rejects(throttled());
      let n = 0;
      const randoms = [0, 1, 0.25, 0.99, 0.5];
      const { delays, retry } = instantRetry(() => randoms[n++ % randoms.length]!);
      const signer = new KmsSigner({
        client,
        keyIds: [key.keyId],
        retry: { ...retry, attempts: 6, baseDelayMs: 100, maxDelayMs: 300 },
      });
      await expect(signer.sign('x')).rejects.toBeInstanceOf(KmsUnavailable);
      expect(delays).toEqual([50, 200, 187.5, 298.5, 225]);
    });

    it('when KMS keeps throttling, then sign fails with KmsUnavailable after the bounded attempts', async () => {
      const key = makeKmsKey('down');
      const { client, kms } = kmsWith([key]);
      kms.on(SignCommand).rejects(throttled());
      const { delays, retry } = instantRetry();
      const signer = new KmsSigner({ client, keyIds: [key.keyId], retry: { ...retry, attempts: 4 } });
      await expect(signer.sign('x')).rejects.toThrow(/KMS Sign failed: ThrottlingException/);
      expect(kms.commandCalls(SignCommand)).toHaveLength(4);
      expect(delays).toHaveLength(3);
    });

    it('when KMS answers a server error, then it is retried too', async () => {
      const key = makeKmsKey('5xx');
      const { client, kms } = kmsWith([key]);
      kms
        .on(SignCommand)
        .rejectsOnce(new KMSInternalException({ message: 'internal', $metadata: { httpStatusCode: 500 } }))
        .callsFake(async (input: SignCommandInput) => signAnswer([key], input));
      const signer = new KmsSigner({ client, keyIds: [key.keyId], retry: instantRetry().retry });
      await expect(signer.sign('x')).resolves.toMatch(/^ey/);
      expect(kms.commandCalls(SignCommand)).toHaveLength(2);
    });

    it('when KMS denies access, then it is not retried', async () => {
      const key = makeKmsKey('denied');
      const { client, kms } = kmsWith([key]);
      kms.on(SignCommand).rejects(kmsError('AccessDeniedException', 'not authorized to perform kms:Sign'));
      const signer = new KmsSigner({ client, keyIds: [key.keyId], retry: instantRetry().retry });
      await expect(signer.sign('x')).rejects.toMatchObject({ name: 'AccessDeniedException' });
      expect(kms.commandCalls(SignCommand)).toHaveLength(1);
    });

    it('when GetPublicKey fails at first, then the failure is not cached and a later call loads the key', async () => {
      const key = makeKmsKey('later');
      const { client, kms } = kmsWith([key]);
      kms.on(GetPublicKeyCommand).rejects(throttled());
      const signer = new KmsSigner({
        client,
        keyIds: [key.keyId],
        retry: { ...instantRetry().retry, attempts: 2 },
      });
      await expect(signer.publicJwks()).rejects.toBeInstanceOf(KmsUnavailable);
      await expect(signer.sign('x')).rejects.toBeInstanceOf(KmsUnavailable);
      expect(() => signer.kid).toThrow('not loaded');

      kms.on(GetPublicKeyCommand).resolves({
        KeyId: key.arn,
        PublicKey: new Uint8Array(key.spki),
        KeySpec: 'ECC_NIST_P256',
        KeyUsage: 'SIGN_VERIFY',
        SigningAlgorithms: ['ECDSA_SHA_256'],
      });
      const jws = await signer.sign('x');
      expect(await verifyWithJwks(jws, await signer.publicJwks())).toBe('x');
    });

    it('when the key is not an ECC_NIST_P256 signing key, then loading fails as a configuration error', async () => {
      const key = makeKmsKey('rsa');
      const { client, kms } = kmsWith([key]);
      kms.on(GetPublicKeyCommand).resolves({ KeyId: key.arn, KeySpec: 'RSA_2048', KeyUsage: 'SIGN_VERIFY' });
      const signer = new KmsSigner({ client, keyIds: [key.keyId] });
      await expect(signer.publicJwks()).rejects.toThrow(KmsKeyMisconfigured);
      kms
        .on(GetPublicKeyCommand)
        .resolves({ KeyId: key.arn, KeySpec: 'ECC_NIST_P256', KeyUsage: 'ENCRYPT_DECRYPT' });
      await expect(signer.publicJwks()).rejects.toThrow('signing needs SIGN_VERIFY');
    });

    it('when KMS answers with a signature the published key does not accept, then sign fails instead of returning it', async () => {
      const published = makeKmsKey('published');
      const other = makeKmsKey('other');
      const { client, kms } = kmsWith([published]);
      kms
        .on(SignCommand)
        .callsFake(async (input: SignCommandInput) => signAnswer([other], { ...input, KeyId: other.arn }));
      const signer = new KmsSigner({ client, keyIds: [published.keyId] });
      await expect(signer.sign('x')).rejects.toThrow('does not verify with the public key');
    });
  });

  describe('metrics', () => {
    /** The count of one labelled series of a counter or histogram in the process registry. */
    async function seriesValue(name: string, operation: string): Promise<number> {
      const metric = await processMetrics().registry.getSingleMetric(name)!.get();
      const wanted = name.endsWith('_seconds') ? `${name}_count` : name;
      const sample = metric.values.find(
        (v) =>
          ((v as { metricName?: string }).metricName ?? name) === wanted && v.labels.operation === operation,
      );
      return sample?.value ?? 0;
    }

    it('when Sign is throttled once and then succeeds, then both calls are timed and the failed one is counted as an error', async () => {
      const { key, client } = throttledThenSigning('metrics', 1);
      const signer = new KmsSigner({ client, keyIds: [key.keyId], retry: instantRetry().retry });
      const before = {
        signCalls: await seriesValue('kms_request_duration_seconds', 'Sign'),
        keyCalls: await seriesValue('kms_request_duration_seconds', 'GetPublicKey'),
        signErrors: await seriesValue('kms_errors_total', 'Sign'),
        keyErrors: await seriesValue('kms_errors_total', 'GetPublicKey'),
      };

      await signer.sign('counted');

      expect(await seriesValue('kms_request_duration_seconds', 'Sign')).toBe(before.signCalls + 2);
      expect(await seriesValue('kms_request_duration_seconds', 'GetPublicKey')).toBe(before.keyCalls + 1);
      expect(await seriesValue('kms_errors_total', 'Sign')).toBe(before.signErrors + 1);
      expect(await seriesValue('kms_errors_total', 'GetPublicKey')).toBe(before.keyErrors);
    });
  });
});
