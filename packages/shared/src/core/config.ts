import { z } from 'zod';
import { isAmqpNodeList } from './amqp-url';
import { DEFAULT_REDIS_PREFIX } from './redis-keys';

/**
 * A configuration the process cannot run with: one problem per bad variable, each `NAME: what is
 * wrong, what to set`. Thrown by parseConfig and by the rules checked later, in wiring (a JSON
 * setting, a setting that needs another); runService prints each problem as one line, no stack.
 */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    // The message is the lines themselves: whoever prints it without runService still says what to fix.
    super(problems.join('\n'));
    this.name = 'ConfigError';
  }
}

/** A ConfigError naming one variable: `configError('JWT_ISSUERS', 'must be a JSON list …')`. */
export const configError = (name: string, problem: string) => new ConfigError([`${name}: ${problem}`]);

/** zod's own wording for a bound ("Too small: expected number to be >=1") as a rule to follow. */
function boundMessage(issue: z.core.$ZodIssue): string | undefined {
  if (issue.code === 'too_small' && typeof issue.minimum === 'number')
    return `must be at least ${issue.minimum}${issue.inclusive === false ? ' (exclusive)' : ''}`;
  if (issue.code === 'too_big' && typeof issue.maximum === 'number')
    return `must be at most ${issue.maximum}${issue.inclusive === false ? ' (exclusive)' : ''}`;
  return undefined;
}

/** `PORT: must be …`: the variable, then what is wrong with it (the messages written here, or zod's own). */
function problemOf(issue: z.core.$ZodIssue): string {
  // PLAN_OVERRIDES.beta.rate, MANDATES_URL[1]: the variable first, then where inside it.
  const name =
    issue.path
      .map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`))
      .join('') || '(environment)';
  const own = /^[a-z]/.test(issue.message);
  return `${name}: ${own ? issue.message : (boundMessage(issue) ?? issue.message)}`;
}

/** Parses the environment once, at start; the result is the only way code reads configuration. */
export function parseConfig<S extends z.ZodType>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.output<S> {
  const result = schema.safeParse(env);
  if (!result.success) throw new ConfigError(result.error.issues.map(problemOf));
  return result.data;
}

/** Building blocks for config schemas. Empty strings count as unset, as shells tend to export them. */
const emptyToUndefined = (v: unknown) => (v === '' ? undefined : v);

/** "a, b,,c" → ['a', 'b', 'c']; a blank or absent value → undefined. */
const splitCommaList = (v: unknown) =>
  typeof v === 'string' && v.trim() !== ''
    ? v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : undefined;

export const env = {
  port: (fallback: number) => {
    const message = 'must be a whole number between 0 and 65535 (0: any free port)';
    return z.preprocess(
      emptyToUndefined,
      z.coerce.number(message).int(message).min(0, message).max(65535, message).default(fallback),
    );
  },
  optionalUrl: () => z.preprocess(emptyToUndefined, z.string().url('must be a URL').optional()),
  /** One URL, or a cluster's nodes: URLs separated by commas, later ones possibly host:port alone. */
  optionalUrlList: () =>
    z.preprocess(
      emptyToUndefined,
      z
        .string()
        .refine(isAmqpNodeList, 'must be a URL, or URLs (or host:port after the first) separated by commas')
        .optional(),
    ),
  string: (fallback: string) => z.preprocess(emptyToUndefined, z.string().default(fallback)),
  optionalString: () => z.preprocess(emptyToUndefined, z.string().optional()),
  int: (fallback: number) =>
    z.preprocess(
      emptyToUndefined,
      z.coerce.number('must be a whole number').int('must be a whole number').default(fallback),
    ),
  bool: (fallback: boolean) =>
    z.preprocess(
      (v) =>
        v === '' || v === undefined ? undefined : ['1', 'true', 'yes'].includes(String(v).toLowerCase()),
      z.boolean().default(fallback),
    ),
  /** A variable that no longer exists: set, the service refuses to start and names what replaced it. */
  removed: (replacement: string) =>
    z.preprocess(emptyToUndefined, z.undefined({ error: `was removed; set ${replacement} instead` })),
  /** A comma-separated list (blank → unset). */
  list: () => z.preprocess(splitCommaList, z.array(z.string()).min(1).optional()),
  /** A comma-separated list of URLs (one service's replicas). */
  urlList: () =>
    z.preprocess(
      splitCommaList,
      z.array(z.string().url('must be a URL (a comma-separated list of replicas)')).min(1).optional(),
    ),
  logLevel: () =>
    z.preprocess(
      emptyToUndefined,
      z
        .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
          error: 'must be one of fatal, error, warn, info, debug, trace, silent',
        })
        .default('info'),
    ),
};

/** Settings every service shares. */
export const commonConfigShape = {
  LOG_LEVEL: env.logLevel(),
  INTERNAL_TOKEN_SECRET: env.optionalString(),
  AMQP_URL: env.optionalUrlList(),
  AMQP_NAMESPACE: env.string('mandate'),
  REDIS_URL: env.optionalUrl(),
  /** Sentinel deployment (redis-target.ts): the sentinels as host:port,…; REDIS_URL then carries only the password and database. */
  REDIS_SENTINELS: env.optionalString(),
  /** The master's name the sentinels watch; required with REDIS_SENTINELS. */
  REDIS_SENTINEL_NAME: env.optionalString(),
  /** Redis Cluster (redis-target.ts): some of its nodes as host:port,…; REDIS_URL then carries only the password. Never with REDIS_SENTINELS. */
  REDIS_CLUSTER_NODES: env.optionalString(),
  /** The sentinels' own password, when they have one. */
  REDIS_SENTINEL_PASSWORD: env.optionalString(),
  /** Prefix of every key any service writes to Redis (redisKeySpaces); one namespace per deployment, as AMQP_NAMESPACE is. */
  REDIS_PREFIX: env.string(DEFAULT_REDIS_PREFIX),
  MONGO_URL: env.optionalString(),
  /** Set: traces are exported there (OTLP/HTTP, `<endpoint>/v1/traces`); unset: tracing is off. */
  OTEL_EXPORTER_OTLP_ENDPOINT: env.optionalUrl(),
  /** The service.name of the traces; default the service's own name. */
  OTEL_SERVICE_NAME: env.optionalString(),
  /** How long finished spans wait to be exported together (ms). */
  OTEL_BSP_SCHEDULE_DELAY: env.int(5000),
  /**
   * The process lowers its own CPU priority to this nice value at start (0–19; 0 leaves it): a
   * background service sharing a machine with the request path yields the CPU to it
   * (docs/DEPLOYMENT.md, "CPU priority").
   */
  PROCESS_NICE: z.preprocess(
    emptyToUndefined,
    z.coerce.number('must be a whole number').int('must be a whole number').min(0).max(19).default(0),
  ),
  /** /livez fails once a dependency has been down this long (ms; liveness.ts). */
  LIVENESS_FAIL_AFTER_MS: z.preprocess(
    emptyToUndefined,
    z.coerce.number('must be a whole number').int('must be a whole number').min(1000).default(60_000),
  ),
};
