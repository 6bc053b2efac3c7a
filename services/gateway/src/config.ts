import { z } from 'zod';
import { commonConfigShape, env, parseConfig } from '@mandate/shared';

export const gatewayConfigSchema = z.object({
  ...commonConfigShape,
  PORT: env.port(8080),
  HOST: env.string('127.0.0.1'),
  OPERATOR_TOKEN: env.optionalString(),
  MANDATES_URL: env.urlList(),
  VERIFY_URL: env.urlList(),
  IDENTITY_URL: env.urlList(),
  AUDIT_URL: env.urlList(),
  /** How long a resolved API key is trusted without asking identity again. */
  KEY_CACHE_TTL_MS: env.int(500),
  /** JSON list of {name, issuer, jwks_uri, audience, subject_scheme} (SPEC §4). */
  JWT_ISSUERS: env.optionalString(),
  TRUST_PROXY: env.bool(false),
});

export type GatewayConfig = z.output<typeof gatewayConfigSchema>;

export const loadGatewayConfig = (source: NodeJS.ProcessEnv = process.env) => parseConfig(gatewayConfigSchema, source);
