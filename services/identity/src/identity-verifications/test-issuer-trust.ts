import type { TrustedIssuerEntry } from './trusted-issuers';

/**
 * The TEST PID issuer as identity trusts it when WALLET_TRUST_TEST_ISSUER is set: its URL and the
 * public half of the key its published seed derives. The issuer itself (issuing PIDs, serving a
 * status list) is development tooling outside every service, @mandate/test-wallet; identity only
 * needs to recognise it, and a test keeps this entry equal to what that issuer signs with.
 */
export const TEST_PID_ISSUER_URL = 'https://test-pid-issuer.invalid';

export const TEST_PID_ISSUER_TRUST: TrustedIssuerEntry = {
  issuer: TEST_PID_ISSUER_URL,
  jwks: {
    keys: [
      {
        kty: 'EC',
        crv: 'P-256',
        x: 'LtrE2XEi4uld3rGWUObr_ojuFYUxV8yh9zJadD0Cp30',
        y: '-ot4oaMDghjEZ61IuKjSZ_BoCotokpy0iatlYigiPf4',
        kid: 'zOs7DlgQ_tUAGDGu0oubkHovT9bAVzQUIKMrdaddgXg',
        alg: 'ES256',
      },
    ],
  },
};

/**
 * The trust list embedded mode runs with: the configured entries plus the TEST issuer, except in
 * production, where a TEST issuer must never vouch for anyone (not even when configured by its URL).
 */
export function testIssuerTrust(
  configured: readonly TrustedIssuerEntry[],
  testIssuer: TrustedIssuerEntry,
  nodeEnv: string | undefined,
): TrustedIssuerEntry[] {
  const others = configured.filter((e) => e.issuer !== testIssuer.issuer);
  return nodeEnv === 'production' ? others : [...others, testIssuer];
}
