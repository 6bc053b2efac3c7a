import { z } from 'zod';
import { commonConfigShape, env } from '@mandate/shared';

/** The only reader of process.env for this service (via parseConfig in main.ts). */
export const configSchema = z.object({
  ...commonConfigShape,
  PORT: env.port(8081),
  HOST: env.string('127.0.0.1'),
  /** Database name when MONGO_URL is set. */
  MONGO_DB: env.string('mandates'),
  /** A private EC P-256 JWK (JSON) to sign with; unset → a key generated at start (embedded mode). */
  LOCAL_SIGNING_KEY: env.optionalString(),
  /** A file holding that JWK; created with a new key on first start (compose keeps it on a volume). */
  LOCAL_SIGNING_KEY_FILE: env.optionalString(),
});

export type Config = z.output<typeof configSchema>;
