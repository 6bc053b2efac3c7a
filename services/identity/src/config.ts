import { commonConfigShape, env, parseConfig } from '@mandate/shared';
import { z } from 'zod';
import { DEFAULT_STAGING_KEY_TTL_HOURS } from './domain/api-key';

export const configSchema = z.object({
  ...commonConfigShape,
  PORT: env.port(8083),
  HOST: env.string('127.0.0.1'),
  /** Database name used when MONGO_URL is set. */
  MONGO_DB: env.string('mandate_identity'),
  /** How long a rotation's staging key may wait for activation before it is revoked (SPEC §5). */
  STAGING_KEY_TTL_HOURS: env.int(DEFAULT_STAGING_KEY_TTL_HOURS).pipe(z.number().int().min(1)),
  /** How often expired staging keys are revoked (and announced); 0 turns the sweeper off. */
  STAGING_KEY_SWEEP_INTERVAL_MS: env.int(60_000).pipe(z.number().int().min(0)),
});

export type IdentityConfig = z.output<typeof configSchema>;

export function loadConfig(source: NodeJS.ProcessEnv = process.env): IdentityConfig {
  return parseConfig(configSchema, source);
}
