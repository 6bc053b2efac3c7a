import { commonConfigShape, env, parseConfig } from '@mandate/shared';
import { z } from 'zod';

export const configSchema = z.object({
  ...commonConfigShape,
  PORT: env.port(8083),
  HOST: env.string('127.0.0.1'),
  /** Database name used when MONGO_URL is set. */
  MONGO_DB: env.string('mandate_identity'),
});

export type IdentityConfig = z.output<typeof configSchema>;

export function loadConfig(source: NodeJS.ProcessEnv = process.env): IdentityConfig {
  return parseConfig(configSchema, source);
}
