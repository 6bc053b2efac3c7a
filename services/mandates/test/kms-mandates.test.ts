import { KMSServiceException, SignCommand, type SignCommandInput } from '@aws-sdk/client-kms';
import pino from 'pino';
import { compactVerify, createLocalJWKSet, decodeProtectedHeader, type JWK } from 'jose';
import { canonicalJson, newId, parseConfig } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { callService, callerFor } from '@mandate/shared/testing';
import { configSchema } from '../src/config';
import { KmsSigner } from '../src/signing/kms-signer';
import { EVIDENCE_JWS_TYP } from '../src/signing/signer';
import { wire } from '../src/wiring';
import { makeKmsKey, mockedKms, signAnswer, startFakeKms, type TestKmsKey } from './kms-support';
import { startService, type RunningService } from './support';

const logger = createLogger('mandates-test', 'silent');
const throttled = () =>
  new KMSServiceException({
    name: 'ThrottlingException',
    message: 'Rate exceeded',
    $fault: 'client',
    $metadata: { httpStatusCode: 400 },
  });
const noWait = { sleep: async () => undefined };

const mandateBody = {
  principal: { id: 'user_alice', type: 'person' },
  delegate: { id: 'agent_42', type: 'agent' },
  scope: { actions: ['payments:*'], constraints: { max_amount: 50000, currency: 'EUR' } },
};

/** What any relying party does: fetch the JWKS, check the JWS, compare the payload with the mandate's immutable fields. */
async function checkMandateSignature(url: string, mandate: any): Promise<void> {
  const jwks = await callService(url, 'GET', '/v1/.well-known/jwks.json');
  expect(jwks.status).toBe(200);
  const { payload, protectedHeader } = await compactVerify(
    mandate.signature.jws,
    createLocalJWKSet(jwks.body as { keys: JWK[] }),
    { algorithms: ['ES256'] },
  );
  expect(protectedHeader.kid).toBe(mandate.signature.kid);
  const { id, tenant_id, principal, delegate, scope, valid_from, expires_at, created_at, status } = mandate;
  expect(new TextDecoder().decode(payload)).toBe(
    canonicalJson({ id, tenant_id, principal, delegate, scope, valid_from, expires_at, created_at, status }),
  );
}

describe('mandates signed with AWS KMS (KMS client mocked)', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanup.reverse()) await c();
    cleanup.length = 0;
  });

  async function serviceWith(keys: TestKmsKey[], keyIds: string[]) {
    const { client, kms } = mockedKms(keys);
    cleanup.push(() => kms.restore());
    const signer = new KmsSigner({ client, keyIds, retry: noWait });
    const service = await startService({ signer });
    cleanup.push(() => service.stop());
    return { service, kms, signer };
  }
  const create = (service: RunningService, tenant: string) =>
    callService(service.url, 'POST', '/v1/mandates', { caller: callerFor(tenant), body: mandateBody });

  it('when a mandate is created, then its signature is an ES256 JWS that verifies against the published JWKS', async () => {
    const key = makeKmsKey('component');
    const { service, signer } = await serviceWith([key], [key.alias]);
    const res = await create(service, newId('tnt'));
    expect(res.status).toBe(201);
    expect(res.body.signature).toMatchObject({ alg: 'ES256', kid: signer.kid });
    expect(decodeProtectedHeader(res.body.signature.jws)).toEqual({ alg: 'ES256', kid: signer.kid });
    await checkMandateSignature(service.url, res.body);
  });

  it('when KMS stays throttled, then create answers 503 and no mandate is stored and no event is published', async () => {
    const key = makeKmsKey('throttled');
    const { service, kms } = await serviceWith([key], [key.keyId]);
    kms.on(SignCommand).rejects(throttled());
    const tenant = newId('tnt');

    const res = await create(service, tenant);
    expect(res).toMatchObject({
      status: 503,
      body: { error: 'SERVICE_UNAVAILABLE', message: 'Signing service unavailable' },
    });
    expect(Object.keys(res.body)).toEqual(['error', 'message']);
    // Retried, bounded.
    expect(kms.commandCalls(SignCommand).length).toBe(4);
    const list = await callService(service.url, 'GET', '/v1/mandates', { caller: callerFor(tenant) });
    expect(list.body).toMatchObject({ data: [], has_more: false });
    expect(service.publisher.events.filter((e) => e.tenant_id === tenant)).toEqual([]);
  });

  it('when KMS is throttled briefly, then create still succeeds with a valid signature', async () => {
    const key = makeKmsKey('brief');
    const { service, kms } = await serviceWith([key], [key.keyId]);
    let failures = 2;
    kms.on(SignCommand).callsFake(async (input: SignCommandInput) => {
      if (failures-- > 0) throw throttled();
      return signAnswer([key], input);
    });
    const res = await create(service, newId('tnt'));
    expect(res.status).toBe(201);
    await checkMandateSignature(service.url, res.body);
  });

  it('when KMS is unreachable from the start, then create answers 503, the readiness check says so, and nothing is stored', async () => {
    const key = makeKmsKey('unreachable');
    const { service, kms } = await serviceWith([key], [key.keyId]);
    kms.reset();
    kms.rejects(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:4566'), { code: 'ECONNREFUSED' }));
    const tenant = newId('tnt');
    expect((await create(service, tenant)).status).toBe(503);
    const ready = await fetch(`${service.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(JSON.stringify(await ready.json())).toContain('ECONNREFUSED');
    const list = await callService(service.url, 'GET', '/v1/mandates', { caller: callerFor(tenant) });
    expect(list.body.data).toEqual([]);
  });

  it('when the signing key is rotated (SIGNING_KEY_IDS=new,old), then mandates signed before the rotation still verify', async () => {
    const oldKey = makeKmsKey('old');
    const newKey = makeKmsKey('new');
    const tenant = newId('tnt');
    const before = await serviceWith([oldKey, newKey], [oldKey.alias]);
    const signedBefore = (await create(before.service, tenant)).body;

    const after = await serviceWith([oldKey, newKey], [newKey.alias, oldKey.alias]);
    const signedAfter = (await create(after.service, tenant)).body;

    expect(signedAfter.signature.kid).not.toBe(signedBefore.signature.kid);
    const jwks = await callService(after.service.url, 'GET', '/v1/.well-known/jwks.json');
    expect(jwks.body.keys.map((k: JWK) => k.kid)).toEqual([
      signedAfter.signature.kid,
      signedBefore.signature.kid,
    ]);
    await checkMandateSignature(after.service.url, signedBefore);
    await checkMandateSignature(after.service.url, signedAfter);
  });

  describe('POST /internal/v1/signatures (evidence digests, for the audit service)', () => {
    const digest = 'ab'.repeat(32);

    it('when a digest is posted, then the answer is a JWS over it with typ mandate-evidence+jws, by the signing key', async () => {
      const key = makeKmsKey('evidence');
      const { service, signer } = await serviceWith([key], [key.keyId]);
      const res = await callService(service.url, 'POST', '/internal/v1/signatures', {
        caller: callerFor(newId('tnt')),
        body: { digest },
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ alg: 'ES256', kid: signer.kid, jws: expect.any(String) });
      const jwks = await callService(service.url, 'GET', '/v1/.well-known/jwks.json');
      const { payload, protectedHeader } = await compactVerify(res.body.jws, createLocalJWKSet(jwks.body), {
        algorithms: ['ES256'],
      });
      expect(new TextDecoder().decode(payload)).toBe(digest);
      expect(protectedHeader).toEqual({ alg: 'ES256', kid: signer.kid, typ: EVIDENCE_JWS_TYP });
    });

    it('when the body is not a lowercase sha256 hex digest, then 400 names the field', async () => {
      const key = makeKmsKey('evidence-400');
      const { service } = await serviceWith([key], [key.keyId]);
      const post = (body: unknown) =>
        callService(service.url, 'POST', '/internal/v1/signatures', {
          caller: callerFor(newId('tnt')),
          body,
        });
      for (const body of [
        {},
        { digest: '{"id":"mdt_forged"}' },
        { digest: digest.toUpperCase() },
        { digest, extra: 1 },
      ]) {
        const res = await post(body);
        expect(res.status).toBe(400);
        expect(res.body.error).toBe('BAD_REQUEST');
        expect(res.body.message).toMatch(/digest|extra/);
      }
    });

    it('when KMS is down, then 503; without an internal token, 401; with GET, 405', async () => {
      const key = makeKmsKey('evidence-503');
      const { service, kms } = await serviceWith([key], [key.keyId]);
      kms.on(SignCommand).rejects(throttled());
      const caller = callerFor(newId('tnt'));
      expect(
        (await callService(service.url, 'POST', '/internal/v1/signatures', { caller, body: { digest } }))
          .status,
      ).toBe(503);
      expect(
        (
          await callService(service.url, 'POST', '/internal/v1/signatures', {
            caller: null,
            body: { digest },
          })
        ).status,
      ).toBe(401);
      expect((await callService(service.url, 'GET', '/internal/v1/signatures', { caller })).status).toBe(405);
    });
  });

  describe('POST /internal/v1/checkpoint-signatures (audit log checkpoints, docs/API.md#proving-the-log)', () => {
    const claims = (tenant: string) => ({
      tenant_id: tenant,
      tree_size: 12,
      root_hash: 'A'.repeat(43),
      issued_at: '2026-11-27T12:00:00.000Z',
    });

    it('when a tenant’s checkpoint is posted, then the answer is a JWS over its canonical claims, typ audit-checkpoint+jwt, by the JWKS key', async () => {
      const key = makeKmsKey('checkpoint');
      const { service, signer } = await serviceWith([key], [key.keyId]);
      const tenant = newId('tnt');
      const res = await callService(service.url, 'POST', '/internal/v1/checkpoint-signatures', {
        caller: callerFor(tenant),
        body: claims(tenant),
      });
      expect(res.status).toBe(200);
      const jwks = await callService(service.url, 'GET', '/v1/.well-known/jwks.json');
      const { payload, protectedHeader } = await compactVerify(res.body.jws, createLocalJWKSet(jwks.body), {
        algorithms: ['ES256'],
      });
      expect(new TextDecoder().decode(payload)).toBe(canonicalJson(claims(tenant)));
      expect(protectedHeader).toEqual({ alg: 'ES256', kid: signer.kid, typ: 'audit-checkpoint+jwt' });
    });

    it('when the claims are another tenant’s or malformed, then 400 and nothing is signed', async () => {
      const key = makeKmsKey('checkpoint-400');
      const { service } = await serviceWith([key], [key.keyId]);
      const tenant = newId('tnt');
      for (const body of [
        claims(newId('tnt')),
        { ...claims(tenant), extra: 1 },
        { ...claims(tenant), root_hash: 'short' },
        { ...claims(tenant), tree_size: 0 },
        { digest: 'ab'.repeat(32) },
      ]) {
        const res = await callService(service.url, 'POST', '/internal/v1/checkpoint-signatures', {
          caller: callerFor(tenant),
          body,
        });
        expect(res.status).toBe(400);
        expect(Object.keys(res.body).sort()).toEqual(['error', 'message']);
      }
    });
  });
});

describe('KMS configuration and wiring', () => {
  const base = { INTERNAL_TOKEN_SECRET: 's'.repeat(32) };
  const savedEnv = { ...process.env };
  afterEach(() => {
    process.env = { ...savedEnv };
  });

  it('when SIGNING_KEY_IDS is a comma list, then it is parsed in order', () => {
    const config = parseConfig(configSchema, {
      ...base,
      SIGNING_KEY_IDS: ' alias/new , alias/old ',
      AWS_REGION: 'eu-west-1',
    });
    expect(config.SIGNING_KEY_IDS).toEqual(['alias/new', 'alias/old']);
    expect(config.KMS_KEY_ID).toBeUndefined();
    expect(config.KMS_TIMEOUT_MS).toBe(2000);
  });

  it('when KMS is selected without AWS_REGION, or KMS_KEY_ID is not the first rotation key, then wire refuses to start', async () => {
    await expect(wire(parseConfig(configSchema, { ...base, KMS_KEY_ID: 'alias/k' }), logger)).rejects.toThrow(
      'AWS_REGION: is required',
    );
    await expect(
      wire(
        parseConfig(configSchema, {
          ...base,
          AWS_REGION: 'eu-west-1',
          KMS_KEY_ID: 'alias/a',
          SIGNING_KEY_IDS: 'alias/b,alias/a',
        }),
        logger,
      ),
    ).rejects.toThrow('KMS_KEY_ID: must be the first of SIGNING_KEY_IDS');
    expect(() => parseConfig(configSchema, { ...base, KMS_ENDPOINT: 'not a url' })).toThrow('KMS_ENDPOINT');
  });

  it('when KMS_KEY_ID and KMS_ENDPOINT point at a KMS-compatible server, then the real SDK signs through it and logs the key it uses', async () => {
    const key = makeKmsKey('wired');
    const fake = await startFakeKms([key]);
    // The SDK reads credentials from its usual chain; a local endpoint accepts any.
    process.env.AWS_ACCESS_KEY_ID = 'test';
    process.env.AWS_SECRET_ACCESS_KEY = 'test';
    const lines: string[] = [];
    const capture = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const config = parseConfig(configSchema, {
      ...base,
      KMS_KEY_ID: key.alias,
      AWS_REGION: 'eu-west-1',
      KMS_ENDPOINT: fake.url,
    });
    const { deps, close } = await wire(config, capture);
    try {
      const jws = await deps.signer.sign('{"through":"http"}');
      const { payload } = await compactVerify(
        jws,
        createLocalJWKSet({ keys: await deps.signer.publicJwks() }),
      );
      expect(new TextDecoder().decode(payload)).toBe('{"through":"http"}');
      expect(fake.calls).toEqual(['GetPublicKey', 'Sign']);
      const log = lines.join('');
      expect(log).toContain('signing with AWS KMS');
      expect(log).toContain(key.arn);
      expect(log).toContain(fake.url);
    } finally {
      await close();
      await fake.stop();
    }
  });
});
