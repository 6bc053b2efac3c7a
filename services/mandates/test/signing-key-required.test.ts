import { exportJWK, generateKeyPair } from 'jose';
import { ConfigError } from '@mandate/shared/core';
import { reportStartFailure, startService } from '@mandate/shared/service';
import { TEST_INTERNAL_SECRET } from '@mandate/shared/testing';
import { service } from '../src/service';

/**
 * Two replicas of mandates started as their own processes must never sign with keys of their own
 * (a mandate signed by one would not verify against the other's JWKS): outside embedded mode a
 * signing key is required, as weak secrets are refused there (docs/API.md, "Hardening").
 */
describe('mandates signing key outside embedded mode', () => {
  const strong = 'a-strong-internal-secret-of-at-least-32-characters';
  const base = {
    INTERNAL_TOKEN_SECRET: strong,
    PORT: '0',
    LOG_LEVEL: 'silent',
    EXPIRY_SWEEP_INTERVAL_MS: '0',
  };

  it('when mandates starts as its own process without LOCAL_SIGNING_KEY, LOCAL_SIGNING_KEY_FILE, KMS_KEY_ID or SIGNING_KEY_IDS, then it refuses with one config error line naming what to set', async () => {
    const failure = await startService(service, base, { separateProcess: true }).then(
      () => 'started',
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(ConfigError);
    const lines: string[] = [];
    reportStartFailure(failure, (line) => lines.push(line));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^config error: LOCAL_SIGNING_KEY: .*LOCAL_SIGNING_KEY_FILE.*KMS_KEY_ID/);
  });

  it('when mandates starts as its own process with LOCAL_SIGNING_KEY, then it starts and signs with that key', async () => {
    const pair = await generateKeyPair('ES256', { extractable: true });
    const key = JSON.stringify(await exportJWK(pair.privateKey));
    const started = await startService(
      service,
      { ...base, LOCAL_SIGNING_KEY: key },
      { separateProcess: true },
    );
    try {
      expect(started.config.LOCAL_SIGNING_KEY).toBe(key);
      const published = await started.deps.signer.publicJwks();
      expect(published.map((k) => k.x)).toEqual([(await exportJWK(pair.publicKey)).x]);
    } finally {
      await started.stop();
    }
  });

  it('when mandates is started embedded (npm start), then a key is generated as before', async () => {
    const started = await startService(service, { ...base, INTERNAL_TOKEN_SECRET: TEST_INTERNAL_SECRET });
    try {
      expect(started.config.LOCAL_SIGNING_KEY).toBeUndefined();
      // No key was given: the one it publishes is the one it generated.
      const published = await started.deps.signer.publicJwks();
      expect(published).toEqual([
        expect.objectContaining({ kty: 'EC', crv: 'P-256', x: expect.any(String) }),
      ]);
    } finally {
      await started.stop();
    }
  });
});
