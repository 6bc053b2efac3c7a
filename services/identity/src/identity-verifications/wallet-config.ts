import { ConfigError, configError } from '@mandate/shared/core';
import { safeFetch, type OutboundLookup } from '@mandate/shared/http';
import type { IdentityConfig } from '../config';
import type { WalletVerifier } from './identity-verification';
import { createVerifierIdentity, verifierIdentityFromPem } from './request';
import { createSignInIssuer, DEFAULT_SIGN_IN_AUDIENCE } from './sign-in-tokens';
import { TEST_PID_ISSUER_TRUST, TEST_PID_ISSUER_URL, testIssuerTrust } from './test-issuer-trust';
import { parseTrustedIssuers } from './trusted-issuers';

/** The keys production must be given (a generated one would change at every start). */
const PRODUCTION_KEYS = [
  'WALLET_VERIFIER_KEY_PEM',
  'WALLET_VERIFIER_CERT_PEM',
  'WALLET_SIGN_IN_KEY_PEM',
] as const;

/**
 * Every rule WALLET_PUBLIC_URL brings with it, each broken one a line of its own, so that one
 * start names all of them: the subject secret, and in production the three keys.
 */
function walletProblems(config: IdentityConfig, production: boolean): string[] {
  const problems: string[] = [];
  if (!config.WALLET_SUBJECT_SECRET || config.WALLET_SUBJECT_SECRET.length < 32)
    problems.push(
      `WALLET_SUBJECT_SECRET: ${config.WALLET_SUBJECT_SECRET ? 'must be at least 32 characters' : 'is required'} when WALLET_PUBLIC_URL is set (keep it stable; e.g. openssl rand -hex 32)`,
    );
  if (production)
    for (const name of PRODUCTION_KEYS)
      if (!config[name])
        problems.push(
          `${name}: is required when NODE_ENV=production and WALLET_PUBLIC_URL is set (docs/WALLET.md)`,
        );
  return problems;
}

const STATUS_LIST_TIMEOUT_MS = 5_000;
const STATUS_LIST_MAX_BYTES = 1024 * 1024;
const STATUS_LIST_CACHE_MS = 60_000;

export interface StatusListFetcherOptions {
  now?: () => number;
  /** The resolver (tests stub it); the system's by default. */
  lookup?: OutboundLookup;
}

/**
 * Fetches status list tokens under the outbound rules (the uri comes from the presented
 * credential): https only, public addresses only (checked on the address connected to), no
 * redirects, 5 s, at most 1 MiB; a short cache. Any refusal throws, so the check fails closed.
 */
export function statusListFetcher(options: StatusListFetcherOptions = {}): (uri: string) => Promise<string> {
  const now = options.now ?? Date.now;
  const cache = new Map<string, { jwt: string; until: number }>();
  return async (uri) => {
    const hit = cache.get(uri);
    if (hit && hit.until > now()) return hit.jwt;
    const res = await safeFetch(uri, {
      headers: { accept: 'application/statuslist+jwt' },
      timeoutMs: STATUS_LIST_TIMEOUT_MS,
      maxBytes: STATUS_LIST_MAX_BYTES,
      lookup: options.lookup,
    });
    if (res.status < 200 || res.status >= 300) throw new Error(`status list answered ${res.status}`);
    const jwt = res.body.toString('utf8').trim();
    if (cache.size > 1_000) cache.clear();
    cache.set(uri, { jwt, until: now() + STATUS_LIST_CACHE_MS });
    return jwt;
  };
}

/** Whether this configuration trusts the TEST PID issuer (named in the embedded banner). */
export const trustsTestIssuer = (config: IdentityConfig): boolean =>
  config.WALLET_TRUST_TEST_ISSUER && config.NODE_ENV !== 'production';

export { TEST_PID_ISSUER_URL };

/**
 * The verifier from configuration, or undefined when WALLET_PUBLIC_URL is unset. A generated
 * verifier key is only allowed outside production; the TEST issuer is trusted only when asked and
 * never in production (testIssuerTrust also drops an entry naming it there).
 */
export async function walletVerifierFromConfig(config: IdentityConfig): Promise<WalletVerifier | undefined> {
  if (!config.WALLET_PUBLIC_URL) return undefined;
  const production = config.NODE_ENV === 'production';
  const publicUrl = config.WALLET_PUBLIC_URL.replace(/\/+$/, '');
  const host = new URL(publicUrl).hostname;
  const problems = walletProblems(config, production);
  const subjectSecret = config.WALLET_SUBJECT_SECRET;
  // No problem means a subject secret; the second test only says so to the type checker.
  if (problems.length > 0 || !subjectSecret) throw new ConfigError(problems);
  let identity;
  if (config.WALLET_VERIFIER_KEY_PEM && config.WALLET_VERIFIER_CERT_PEM) {
    identity = await verifierIdentityFromPem(
      host,
      config.WALLET_VERIFIER_KEY_PEM,
      config.WALLET_VERIFIER_CERT_PEM,
    ).catch((err: unknown) => {
      // A key or chain that does not parse, or a certificate for another host: the operator's to fix.
      throw configError(
        'WALLET_VERIFIER_KEY_PEM / WALLET_VERIFIER_CERT_PEM',
        `${err instanceof Error ? err.message : String(err)} (a P-256 PKCS#8 key and its chain, leaf first, naming ${host})`,
      );
    });
  } else {
    identity = await createVerifierIdentity(host);
  }
  const configured = parseTrustedIssuers(config.WALLET_TRUSTED_ISSUERS);
  // Production: never the TEST issuer (testIssuerTrust drops an entry naming it); elsewhere only when asked.
  const trustedIssuers =
    production || config.WALLET_TRUST_TEST_ISSUER
      ? testIssuerTrust(configured, TEST_PID_ISSUER_TRUST, production ? 'production' : 'development')
      : configured;
  return {
    identity,
    publicUrl,
    trustedIssuers,
    subjectSecret,
    fetchStatusList: statusListFetcher(),
    signIn: await createSignInIssuer(publicUrl, DEFAULT_SIGN_IN_AUDIENCE, config.WALLET_SIGN_IN_KEY_PEM),
  };
}
