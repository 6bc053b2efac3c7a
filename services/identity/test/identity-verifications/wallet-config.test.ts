import { loadConfig } from '../../src/config';
import { TEST_PID_ISSUER_URL } from '../../src/identity-verifications/test-issuer-trust';
import { walletVerifierFromConfig } from '../../src/identity-verifications/wallet-config';

const SECRET = 'a-subject-secret-of-at-least-32-characters';
const base = { WALLET_PUBLIC_URL: 'http://127.0.0.1:8080', WALLET_SUBJECT_SECRET: SECRET };

describe('wallet verifier configuration', () => {
  it('when WALLET_PUBLIC_URL is unset, then there is no verifier', async () => {
    expect(await walletVerifierFromConfig(loadConfig({}))).toBeUndefined();
  });

  it('when the TEST issuer is asked for outside production, then it is trusted, with a generated verifier and sign-in key', async () => {
    const wallet = await walletVerifierFromConfig(loadConfig({ ...base, WALLET_TRUST_TEST_ISSUER: 'true' }));
    expect(wallet?.trustedIssuers.map((e) => e.issuer)).toEqual([TEST_PID_ISSUER_URL]);
    expect(wallet?.identity.clientId).toBe('x509_san_dns:127.0.0.1');
    expect(wallet?.signIn?.issuer).toBe('http://127.0.0.1:8080');
  });

  it('when the TEST issuer is not asked for, then nobody is trusted by default', async () => {
    const wallet = await walletVerifierFromConfig(loadConfig(base));
    expect(wallet?.trustedIssuers).toEqual([]);
  });

  it('when NODE_ENV=production, then the TEST issuer is never trusted and generated keys are refused', async () => {
    const production = { ...base, NODE_ENV: 'production', WALLET_TRUST_TEST_ISSUER: 'true' };
    await expect(walletVerifierFromConfig(loadConfig(production))).rejects.toThrow(
      'WALLET_VERIFIER_KEY_PEM: is required when NODE_ENV=production',
    );
  });

  it('when the subject secret is missing or short, then it refuses to start', async () => {
    await expect(
      walletVerifierFromConfig(loadConfig({ ...base, WALLET_SUBJECT_SECRET: 'short' })),
    ).rejects.toThrow('WALLET_SUBJECT_SECRET');
  });
});
