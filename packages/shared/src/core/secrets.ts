import { readFileSync } from 'node:fs';
import { z } from 'zod';

/** The shared secrets held to a minimum (docs/API.md, "Hardening"): shorter ones, or documented ones, refuse to start. */
export const SECRET_VARIABLES = ['INTERNAL_TOKEN_SECRET', 'OPERATOR_TOKEN'] as const;
export const MIN_SECRET_LENGTH = 32;

/**
 * Every secret value ever printed in this repository (docs, README, docker-compose.yml, test
 * helpers): anyone can read them, so no service started as its own process accepts one. The one
 * list; add a value here whenever an example secret is printed anywhere.
 */
export const DOCUMENTED_SECRET_VALUES: readonly string[] = [
  // docker-compose.yml defaults before secrets were generated on first start.
  'dev-only-internal-token-secret-change-me',
  'dev-only-operator-token-change-me',
  // TEST_INTERNAL_SECRET of @mandate/shared/testing.
  'test-internal-secret-0123456789abcdef',
];

/** Variables that may instead be read from the file `<NAME>_FILE` names (compose keeps generated secrets on a volume). */
export const FILE_VARIABLES = [...SECRET_VARIABLES, 'AMQP_URL', 'REDIS_URL', 'MONGO_URL'] as const;

/** Why `value` is not acceptable as a secret, or undefined. Never includes the value. */
export function secretProblem(value: string): string | undefined {
  if (DOCUMENTED_SECRET_VALUES.includes(value))
    return 'is an example value printed in the documentation; set a secret of your own (e.g. openssl rand -hex 32)';
  if (value.length < MIN_SECRET_LENGTH)
    return `must be at least ${MIN_SECRET_LENGTH} characters (e.g. openssl rand -hex 32)`;
  return undefined;
}

type Read = (path: string) => string;

/**
 * The configuration of a service started as its own process (not embedded mode, which generates
 * its secrets): each of FILE_VARIABLES may come from `<NAME>_FILE` (surrounding whitespace
 * dropped, as files end with a newline), and a weak or documented secret is a configuration error
 * naming the variable.
 */
export function separateProcessConfig<S extends z.ZodType>(
  schema: S,
  read: Read = (path) => readFileSync(path, 'utf8'),
) {
  return z
    .preprocess((input, ctx) => {
      if (typeof input !== 'object' || input === null) return input;
      const env: Record<string, unknown> = { ...input };
      for (const name of FILE_VARIABLES) {
        const file = env[`${name}_FILE`];
        if (typeof file !== 'string' || file === '') continue;
        if (typeof env[name] === 'string' && env[name] !== '') {
          ctx.addIssue({ code: 'custom', path: [name], message: `set ${name} or ${name}_FILE, not both` });
          continue;
        }
        try {
          env[name] = read(file).trim();
        } catch (err) {
          const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
          ctx.addIssue({
            code: 'custom',
            path: [`${name}_FILE`],
            message: `cannot read ${file} (${reason})`,
          });
        }
      }
      return env;
    }, schema)
    .superRefine((config, ctx) => {
      // Every service signs or checks internal tokens; as its own process nobody generates one for it.
      if (!(config as Record<string, unknown>).INTERNAL_TOKEN_SECRET)
        ctx.addIssue({
          code: 'custom',
          path: ['INTERNAL_TOKEN_SECRET'],
          message:
            'is required when a service runs as its own process (the same value in every service; e.g. openssl rand -hex 32)',
        });
      for (const name of SECRET_VARIABLES) {
        const value = (config as Record<string, unknown>)[name];
        const problem = typeof value === 'string' ? secretProblem(value) : undefined;
        if (problem) ctx.addIssue({ code: 'custom', path: [name], message: problem });
      }
    });
}
