import { z } from 'zod';

/** Parses the environment once, at start; the result is the only way code reads configuration. */
export function parseConfig<S extends z.ZodType>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.output<S> {
  const result = schema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.') || '(env)'}: ${i.message}`);
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return result.data;
}

/** Building blocks for config schemas. Empty strings count as unset, as shells tend to export them. */
const emptyToUndefined = (v: unknown) => (v === '' ? undefined : v);

export const env = {
  port: (fallback: number) =>
    z.preprocess(emptyToUndefined, z.coerce.number().int().min(0).max(65535).default(fallback)),
  optionalUrl: () => z.preprocess(emptyToUndefined, z.string().url().optional()),
  string: (fallback: string) => z.preprocess(emptyToUndefined, z.string().default(fallback)),
  optionalString: () => z.preprocess(emptyToUndefined, z.string().optional()),
  int: (fallback: number) => z.preprocess(emptyToUndefined, z.coerce.number().int().default(fallback)),
  bool: (fallback: boolean) =>
    z.preprocess(
      (v) =>
        v === '' || v === undefined ? undefined : ['1', 'true', 'yes'].includes(String(v).toLowerCase()),
      z.boolean().default(fallback),
    ),
  /** A comma-separated list of URLs (one service's replicas). */
  urlList: () =>
    z.preprocess(
      (v) =>
        typeof v === 'string' && v.trim() !== ''
          ? v
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean)
          : undefined,
      z.array(z.string().url()).min(1).optional(),
    ),
  logLevel: () =>
    z.preprocess(
      emptyToUndefined,
      z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    ),
};

/** Settings every service shares. */
export const commonConfigShape = {
  LOG_LEVEL: env.logLevel(),
  INTERNAL_TOKEN_SECRET: env.optionalString(),
  AMQP_URL: env.optionalUrl(),
  AMQP_NAMESPACE: env.string('mandate'),
  REDIS_URL: env.optionalUrl(),
  MONGO_URL: env.optionalString(),
};
