import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SYNC_TIMEOUT_MS } from '@mandate/shared/testing';
import { calculateJwkThumbprint, compactVerify, createLocalJWKSet, type JWK } from 'jose';
import { makeKmsKey, startFakeKms } from '@mandate/mandates/testing';
import { apiClient, createTenant, eventually, startStack, type Stack } from '../support/stack';

const BIN = path.resolve(__dirname, '../../packages/evidence-cli/bin/mandate-evidence.js');

/**
 * Signing keys and evidence, end to end: the five services as processes on the real RabbitMQ and
 * Redis, the mandates service signing through the real AWS SDK against a KMS look-alike
 * (KMS_KEY_ID + KMS_ENDPOINT), the export through the gateway, the bundle checked by the CLI.
 */
describe('end to end: KMS-signed mandates and a verifiable evidence export', () => {
  const key = makeKmsKey('e2e');
  let kms: Awaited<ReturnType<typeof startFakeKms>>;
  let stack: Stack;
  let api: ReturnType<typeof apiClient>;
  let dir: string;

  beforeAll(async () => {
    kms = await startFakeKms([key]);
    stack = await startStack({
      mandates: {
        KMS_KEY_ID: key.alias,
        AWS_REGION: 'eu-west-1',
        KMS_ENDPOINT: kms.url,
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
      },
    });
    api = apiClient(stack.gateway.url);
    dir = mkdtempSync(path.join(tmpdir(), 'evidence-e2e-'));
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
    await kms?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  /** The CLI on a bundle, pinned to the JWKS saved from the service (as the README tells users to). */
  const cli = (bundle: unknown, name: string, jwks?: unknown) => {
    const file = path.join(dir, name);
    writeFileSync(file, JSON.stringify(bundle, null, 2));
    const args = [BIN, 'verify', file];
    if (jwks !== undefined) {
      writeFileSync(path.join(dir, 'jwks.json'), JSON.stringify(jwks));
      args.push('--jwks', path.join(dir, 'jwks.json'));
    }
    const res = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: SYNC_TIMEOUT_MS });
    return { status: res.status, stdout: res.stdout, stderr: res.stderr };
  };

  it('when a mandate is signed with KMS and its evidence exported, then the bundle verifies offline and tampering is named', async () => {
    const a = await createTenant(stack, { name: 'Evidence A' });
    const authA = a.auth;
    const authB = (await createTenant(stack, { name: 'Evidence B' })).auth;

    const created = await api('POST', '/v1/mandates', {
      auth: authA,
      body: {
        principal: 'user_alice',
        delegate: { id: 'agent_42', type: 'agent' },
        scope: { actions: ['payments:*'] },
      },
    });
    expect(created.status).toBe(201);
    const id: string = created.body.id;
    // Signed by the KMS key: its kid is the thumbprint of the key's public half, published in the JWKS.
    const publicJwk = key.publicKey.export({ format: 'jwk' });
    const kid = await calculateJwkThumbprint(
      { kty: 'EC', crv: 'P-256', x: publicJwk.x!, y: publicJwk.y! },
      'sha256',
    );
    expect(created.body.signature.kid).toBe(kid);
    const jwks = (await api('GET', '/v1/.well-known/jwks.json')).body as { keys: JWK[] };
    expect(jwks.keys.map((k) => k.kid)).toEqual([kid]);
    expect(kms.calls).toContain('Sign');

    expect(
      (await api('POST', '/v1/verify', { auth: authA, body: { mandate_id: id, action: 'payments:create' } }))
        .body.decision,
    ).toBe('ALLOW');
    expect(
      (await api('POST', `/v1/mandates/${id}/suspend`, { auth: authA, body: { reason: 'card lost' } }))
        .status,
    ).toBe(200);

    // Events travel through RabbitMQ: export once all three have arrived.
    const bundle = await eventually(
      async () => {
        const res = await api('GET', `/v1/mandates/${id}/evidence`, { auth: authA });
        if (res.status !== 200) throw new Error(`export answered ${res.status}: ${res.text}`);
        // Earlier polls are exports too (EVIDENCE_EXPORTED is about this mandate): wait for the three others.
        const types = (res.body.events as { type: string }[])
          .map((e) => e.type)
          .filter((t) => t !== 'EVIDENCE_EXPORTED');
        return types.length === 3 ? { ...res.body, types } : undefined;
      },
      20_000,
      'the mandate events in the export',
    );
    expect(bundle.types).toEqual(['MANDATE_CREATED', 'VERIFICATION_PERFORMED', 'MANDATE_SUSPENDED']);
    delete bundle.types;
    expect(bundle.mandate).toMatchObject({ id, state: 'SUSPENDED', signature: created.body.signature });
    const { payload } = await compactVerify(bundle.signature, createLocalJWKSet(jwks), {
      algorithms: ['ES256'],
    });
    expect(new TextDecoder().decode(payload)).toBe(bundle.digest);

    const ok = cli(bundle, 'bundle.json', jwks);
    expect(ok).toMatchObject({ status: 0, stdout: expect.stringContaining('OK mandate signature') });
    expect(ok.stdout).toContain('OK pinned keys');
    // Unpinned, every check passes but it is not "verified".
    expect(cli(bundle, 'bundle-unpinned.json')).toMatchObject({
      status: 3,
      stdout: expect.stringContaining('UNPINNED'),
    });

    const mandateTampered = structuredClone(bundle);
    mandateTampered.mandate.delegate.id = 'agent_43';
    const m = cli(mandateTampered, 'mandate-tampered.json', jwks);
    expect(m.status).toBe(1);
    expect(m.stdout).toContain('FAILED mandate signature');

    const eventTampered = structuredClone(bundle);
    eventTampered.events[1].data.decision = 'DENY';
    const e = cli(eventTampered, 'event-tampered.json', jwks);
    expect(e.status).toBe(1);
    expect(e.stdout).toContain('FAILED digest');
    expect(e.stdout).toContain('OK mandate signature');

    const digestTampered = {
      ...bundle,
      digest: bundle.digest.replace(/^./, (c: string) => (c === '0' ? '1' : '0')),
    };
    const d = cli(digestTampered, 'digest-tampered.json', jwks);
    expect(d.status).toBe(1);
    expect(d.stdout).toContain('FAILED digest');
    expect(d.stdout).toContain('FAILED bundle signature');

    // Another tenant cannot export it, and cannot tell it exists.
    expect(await api('GET', `/v1/mandates/${id}/evidence`, { auth: authB })).toMatchObject({
      status: 404,
      body: { error: 'NOT_FOUND', message: 'Mandate not found' },
    });

    // The export is itself on the record, with the key that asked for it.
    const exported = await api('GET', `/v1/events?resource_id=${id}&type=EVIDENCE_EXPORTED`, { auth: authA });
    expect(exported.body.data[0]).toMatchObject({
      type: 'EVIDENCE_EXPORTED',
      actor: { type: 'api_key', key_id: a.api_key.key_id },
      resource: { type: 'mandate', id },
    });
  }, 60_000);
});
