import { commonConfigShape, env, parseConfig } from '@mandate/shared/core';
import { type DeploymentNeeds } from '@mandate/shared/service';
import { z } from 'zod';
import {
  DEFAULT_ROTATION_GRACE_SECONDS,
  DEFAULT_STAGING_KEY_TTL_HOURS,
  MAX_ROTATION_GRACE_SECONDS,
} from './api-keys/api-key';

export const configSchema = z.object({
  ...commonConfigShape,
  PORT: env.port(8083),
  HOST: env.string('127.0.0.1'),
  /** Database name used when MONGO_URL is set. */
  MONGO_DB: env.string('mandate_identity'),
  /** How long a rotation's staging key may wait for activation before it is revoked (docs/API.md, "API keys"). */
  STAGING_KEY_TTL_HOURS: env.int(DEFAULT_STAGING_KEY_TTL_HOURS).pipe(z.number().int().min(1)),
  /**
   * How long a rotated key keeps working after its successor is activated without `grace_seconds`
   * (docs/API.md#api-key-rotation-grace); 0 revokes it at once.
   */
  KEY_ROTATION_GRACE_SECONDS: env
    .int(DEFAULT_ROTATION_GRACE_SECONDS)
    .pipe(z.number().int().min(0).max(MAX_ROTATION_GRACE_SECONDS)),
  /**
   * How often the credential feed reads the epoch and writes the gateways a line (docs/DECISIONS.md,
   * "Credential changes"); below twice the gateways' CREDENTIAL_CHECK_INTERVAL_MS, or they take the
   * feed for silent and check instead.
   */
  CREDENTIAL_FEED_TICK_MS: env.int(250).pipe(z.number().int().min(10).max(5_000)),
  /** How often expired staging keys are revoked (and announced); 0 turns the sweeper off. */
  STAGING_KEY_SWEEP_INTERVAL_MS: env.int(60_000).pipe(z.number().int().min(0)),
  /**
   * The public base URL wallets reach the /v1 routes at (the gateway's), e.g. https://api.example.com.
   * Unset: identity verification is off (its routes answer 503).
   */
  WALLET_PUBLIC_URL: env.optionalUrl(),
  /** JSON array of trusted PID issuers (see docs/WALLET.md); unset or empty trusts no one. */
  WALLET_TRUSTED_ISSUERS: env.optionalString(),
  /** Trust the generated TEST PID issuer (embedded mode); never honoured when NODE_ENV=production. */
  WALLET_TRUST_TEST_ISSUER: env.bool(false),
  /** Keys the wallet subject_id pseudonym; required with WALLET_PUBLIC_URL; keep it stable. */
  WALLET_SUBJECT_SECRET: env.optionalString(),
  /** The verifier's key (PKCS#8 PEM, P-256) and certificate chain (PEM, leaf first) for the public host. */
  WALLET_VERIFIER_KEY_PEM: env.optionalString(),
  WALLET_VERIFIER_CERT_PEM: env.optionalString(),
  /** Signs the wallet sign-in JWTs (PKCS#8 PEM, P-256); unset: a key generated at start (not in production). */
  WALLET_SIGN_IN_KEY_PEM: env.optionalString(),
  /** NODE_ENV, read here because config.ts is the only reader of process.env. */
  NODE_ENV: env.optionalString(),
});

export type IdentityConfig = z.output<typeof configSchema>;

export function loadConfig(source: NodeJS.ProcessEnv = process.env): IdentityConfig {
  return parseConfig(configSchema, source);
}

/**
 * What identity needs as its own process listening beyond loopback (a container, a pod): refused at
 * start without it, and checked against the manifests by test/deploy/production-config.test.ts.
 */
export const deploymentNeeds: DeploymentNeeds = {
  required: {
    INTERNAL_TOKEN_SECRET: 'signs and checks the internal tokens; the same value in every service',
    AMQP_URL: 'without it the events stay in this process and never reach audit',
    MONGO_URL: 'tenants, API keys and role assignments must survive a restart',
  },
  publicUrls: {
    WALLET_PUBLIC_URL: 'where wallets post their responses',
    WALLET_TRUSTED_ISSUERS: 'the PID issuers wallets present credentials of',
  },
  outbound: {
    WALLET_TRUSTED_ISSUERS: "the PID issuers' status lists and keys",
  },
};
