import { z } from 'zod';
import { commonConfigShape, env, parseConfig } from '@mandate/shared';

export const configSchema = z.object({
  ...commonConfigShape,
  PORT: env.port(8082),
  HOST: env.string('127.0.0.1'),
  /** The mandates service's replicas, comma-separated; required unless a reader is injected. */
  MANDATES_URL: env.urlList(),
  /** Upper bound for one mandate read, retries included. */
  MANDATES_TIMEOUT_MS: env.int(2_000).pipe(z.number().min(1)),
});
export type Config = z.output<typeof configSchema>;

export const loadConfig = (source: NodeJS.ProcessEnv = process.env): Config =>
  parseConfig(configSchema, source);
