/**
 * Identity verification with the TEST wallet on a developer's machine, the same for `npm start`
 * (scripts/embedded.ts) and `npm run start:services` (scripts/services.ts): identity's WALLET_*
 * settings and the gateway's trust in the wallet sign-in tokens, each chosen only when the
 * environment leaves it unset.
 */
import { randomBytes } from 'node:crypto';

/** Empty counts as unset, as in every service's configuration. */
const isSet = (v: string | undefined): v is string => v !== undefined && v !== '';

/**
 * Identity's wallet settings: the wallet reaches the gateway on loopback at `port`, a subject
 * secret generated for this run, and the generated TEST PID issuer trusted (identity never honours
 * that when NODE_ENV=production). Nothing without a port (0: not known before the gateway listens)
 * and no WALLET_PUBLIC_URL. What the environment sets wins.
 */
export function localWalletEnv(env: NodeJS.ProcessEnv, port: number): Record<string, string> {
  if (port === 0 && !isSet(env.WALLET_PUBLIC_URL)) return {};
  return {
    WALLET_PUBLIC_URL: isSet(env.WALLET_PUBLIC_URL) ? env.WALLET_PUBLIC_URL : `http://127.0.0.1:${port}`,
    WALLET_TRUST_TEST_ISSUER: isSet(env.WALLET_TRUST_TEST_ISSUER) ? env.WALLET_TRUST_TEST_ISSUER : 'true',
    WALLET_SUBJECT_SECRET: isSet(env.WALLET_SUBJECT_SECRET)
      ? env.WALLET_SUBJECT_SECRET
      : randomBytes(32).toString('hex'),
  };
}

/**
 * The gateway trusts identity's wallet sign-in tokens: their issuer joins JWT_ISSUERS (subject
 * scheme wallet, JWKS through the gateway's own public route), unless a wallet issuer is configured.
 */
export function walletJwtIssuer(
  raw: string | undefined,
  wallet: Record<string, string>,
): { JWT_ISSUERS?: string } {
  const publicUrl = wallet.WALLET_PUBLIC_URL;
  if (!publicUrl) return {};
  let issuers: unknown[] = [];
  try {
    issuers = raw?.trim() ? (JSON.parse(raw) as unknown[]) : [];
  } catch {
    return {}; // the gateway's config reports the malformed value
  }
  if (
    !Array.isArray(issuers) ||
    issuers.some((i) => (i as { subject_scheme?: string }).subject_scheme === 'wallet')
  )
    return {};
  const url = publicUrl.replace(/\/+$/, '');
  const entry = {
    name: 'wallet',
    issuer: url,
    jwks_uri: `${url}/v1/wallet/jwks`,
    audience: 'mandate-api',
    subject_scheme: 'wallet',
  };
  return { JWT_ISSUERS: JSON.stringify([...issuers, entry]) };
}

export interface LocalWallet {
  /** Added to identity's environment. */
  identity: Record<string, string>;
  /** Added to the gateway's environment. */
  gateway: Record<string, string>;
  /** One line per default chosen, for the launcher's log. */
  notes: string[];
}

/**
 * `npm run start:services`: the wallet defaults of `npm start` for the gateway listening on
 * `gatewayPort`, with one line saying each one chosen. Under NODE_ENV=production none are chosen:
 * a real wallet verifier needs its own key and certificate (docs/CONFIGURATION.md).
 */
export function localWallet(
  identityEnv: Record<string, string | undefined>,
  gatewayEnv: Record<string, string | undefined>,
  gatewayPort: string,
): LocalWallet {
  if (identityEnv.NODE_ENV === 'production')
    return {
      identity: {},
      gateway: {},
      notes: isSet(identityEnv.WALLET_PUBLIC_URL)
        ? []
        : [
            'wallet: off (NODE_ENV=production; set WALLET_PUBLIC_URL and the WALLET_* keys, docs/CONFIGURATION.md)',
          ],
    };
  const identity = localWalletEnv(identityEnv, Number(gatewayPort));
  const gateway = walletJwtIssuer(gatewayEnv.JWT_ISSUERS, identity);
  const notes: string[] = [];
  if (!isSet(identityEnv.WALLET_PUBLIC_URL))
    notes.push(
      `wallet: WALLET_PUBLIC_URL=${identity.WALLET_PUBLIC_URL} (the gateway's address; set it to change)`,
    );
  if (!isSet(identityEnv.WALLET_SUBJECT_SECRET))
    notes.push(
      'wallet: WALLET_SUBJECT_SECRET generated for this run (wallet subject ids change at each start; set it to keep them)',
    );
  if (!isSet(identityEnv.WALLET_TRUST_TEST_ISSUER))
    notes.push(
      'wallet: the TEST PID issuer is trusted (scripts/test-wallet.ts; set WALLET_TRUST_TEST_ISSUER=false to refuse it)',
    );
  if (gateway.JWT_ISSUERS)
    notes.push("wallet: the gateway accepts the wallet's sign-in tokens (a JWT_ISSUERS entry named wallet)");
  return { identity, gateway, notes };
}
