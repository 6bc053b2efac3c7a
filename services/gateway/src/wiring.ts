import {
  configError,
  ConfigError,
  internalTokens,
  redisKeySpaces,
  type InternalTokens,
} from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import {
  BatchingPublisher,
  JournaledPublisher,
  InProcessBus,
  RabbitPublisher,
  SpoolingPublisher,
  defaultSpoolDir,
  amqpTopology,
  type EventPublisher,
} from '@mandate/shared/events';
import { describeRedis, redisTarget, type RedisTarget } from '@mandate/shared/data';
import { ServiceClient } from '@mandate/shared/http';
import { compose, wireWith, type Closers } from '@mandate/shared/service';
import type { GatewayDeps, Upstreams } from './deps';
import { wireCredentials, type CredentialEventSource } from './auth/wiring';
import type { GatewayConfig } from './config';
import { buildPublicOpenApi } from './openapi';
import { createLimiter } from './limits';
import { createIdempotency } from './idempotency';
import { DevSignIn } from './dashboard/dev-sign-in';
import { isLoopbackHost } from './http/loopback';
import { defaultDashboardDir, type DashboardOidc } from './dashboard/static';
import { parseJwtIssuers } from './auth/jwt';

/**
 * Builds the gateway's dependencies; each configured URL switches its adapter, over any override
 * (the one composition rule, `compose`). Without AMQP_URL,
 * `credentialEvents` (the embedded mode's bus) carries the key and role events that evict cached
 * credentials.
 */
export async function wire(
  config: GatewayConfig,
  logger: Logger,
  overrides: Partial<GatewayDeps> & {
    credentialEvents?: CredentialEventSource;
    /** The embedded launcher's development sign-in (docs/DASHBOARD.md); never from a variable. */
    devSignIn?: boolean;
  } = {},
): Promise<{ deps: GatewayDeps; close(): Promise<void> }> {
  // What it built is closed by close() (each closer even when another fails), or at once when a
  // later step fails: a half-finished wiring leaves no connection behind (wireWith).
  return wireWith(
    (closers) => build(config, logger, overrides, closers),
    (err) => logger.warn({ err }, 'gateway: closing a dependency failed'),
  );
}

type Overrides = Parameters<typeof wire>[2] & object;

async function build(
  config: GatewayConfig,
  logger: Logger,
  overrides: Overrides,
  closers: Closers,
): Promise<GatewayDeps> {
  const { tokens, operatorToken, urls, missing } = requireSecrets(config, overrides);
  const upstreams = await wireUpstreams(config, logger, {
    urls,
    missing,
    override: overrides.upstreams,
    closers,
  });
  const publisher = await wirePublisher(config, logger, overrides.publisher, closers);

  // API keys, JWT callers (JWT_ISSUERS) and, with RabbitMQ, cache eviction on key and role events.
  const credentials = await wireCredentials(
    config,
    { identity: upstreams.identity, tokens, logger, events: overrides.credentialEvents },
    overrides,
  );
  closers.add(() => credentials.close());
  const { keys, subjects, usableKeys } = credentials;
  const devSignIn = await wireDevSignIn(config, logger, overrides.devSignIn, {
    identity: upstreams.identity,
    tokens,
    subjects,
  });
  const jwt = devSignIn ? devSignIn.authenticator(credentials.jwt) : credentials.jwt;

  const redis = redisTarget(config);
  if (redis) logger.info({ redis: describeRedis(redis) }, 'Redis topology');
  const limiter = await wireLimiter(config, logger, { redis, override: overrides.limiter, closers });
  const idempotency = await wireIdempotency(config, logger, { redis, overrides, closers });

  const deps: GatewayDeps = {
    tokens,
    logger,
    publisher,
    upstreams,
    keys,
    usableKeys,
    operatorToken,
    openApiDocument: overrides.openApiDocument ?? buildPublicOpenApi,
    readiness: overrides.readiness,
    jwt,
    limiter,
    idempotency,
    trustProxy: overrides.trustProxy ?? config.TRUST_PROXY,
    accessLog: overrides.accessLog ?? config.ACCESS_LOG,
    dashboard: overrides.dashboard ?? {
      dir: config.DASHBOARD_DIR ?? defaultDashboardDir(),
      devSignIn,
      oidc: dashboardOidc(config, logger),
      walletSignIn: parseJwtIssuers(config.JWT_ISSUERS).some((i) => i.subject_scheme === 'wallet'),
    },
  };
  return deps;
}

const UPSTREAM_NAMES = ['MANDATES', 'VERIFY', 'IDENTITY', 'AUDIT'] as const;

/** The upstream URLs when all four are set (else none: the override, or the error, decides). */
type UpstreamUrls = GatewayConfig & Record<`${(typeof UPSTREAM_NAMES)[number]}_URL`, string[]>;

/**
 * Secrets and upstreams by the composition rule too: the variable, else the override. Every
 * missing one is reported at once, as parseConfig reports its problems.
 */
function requireSecrets(
  config: GatewayConfig,
  overrides: Overrides,
): { tokens: InternalTokens; operatorToken: string; urls: UpstreamUrls | undefined; missing: string[] } {
  const tokens = config.INTERNAL_TOKEN_SECRET
    ? internalTokens(config.INTERNAL_TOKEN_SECRET)
    : overrides.tokens;
  const operatorToken = config.OPERATOR_TOKEN ?? overrides.operatorToken;
  const urls = UPSTREAM_NAMES.every((name) => config[`${name}_URL`]) ? (config as UpstreamUrls) : undefined;
  const missing = [
    ...(tokens
      ? []
      : ['INTERNAL_TOKEN_SECRET: is required (the same value in every service; e.g. openssl rand -hex 32)']),
    ...(operatorToken
      ? []
      : ["OPERATOR_TOKEN: is required (the platform operator's bearer secret; e.g. openssl rand -hex 32)"]),
    ...(urls || overrides.upstreams
      ? []
      : UPSTREAM_NAMES.filter((name) => !config[`${name}_URL`]).map(
          (name) => `${name}_URL: is required: the ${name.toLowerCase()} service, comma-separated replicas`,
        )),
  ];
  if (!tokens || !operatorToken || missing.length > 0) throw new ConfigError(missing);
  return { tokens, operatorToken, urls, missing };
}

/** One ServiceClient per upstream from the *_URL variables, else the override. */
async function wireUpstreams(
  config: GatewayConfig,
  logger: Logger,
  opts: { urls: UpstreamUrls | undefined; missing: string[]; override?: Upstreams; closers: Closers },
): Promise<Upstreams> {
  const { closers } = opts;
  const { adapter } = await compose<Upstreams, UpstreamUrls>({
    variable: opts.urls,
    fromVariable: (c) => {
      const client = (replicas: string[]) => {
        const built = new ServiceClient(replicas, undefined, undefined, config.UPSTREAM_TIMEOUT_MS);
        closers.add(() => built.close());
        return built;
      };
      logger.info(
        { mandates: c.MANDATES_URL, verify: c.VERIFY_URL, identity: c.IDENTITY_URL, audit: c.AUDIT_URL },
        'forwarding to upstream services',
      );
      return {
        mandates: client(c.MANDATES_URL),
        verify: client(c.VERIFY_URL),
        identity: client(c.IDENTITY_URL),
        audit: client(c.AUDIT_URL),
      };
    },
    override: opts.override,
    local: () => {
      throw new ConfigError(opts.missing);
    },
  });
  return adapter;
}

/** API_CALL events: RabbitMQ when AMQP_URL is set, else the override, else an in-process bus. */
async function wirePublisher(
  config: GatewayConfig,
  logger: Logger,
  override: EventPublisher | undefined,
  closers: Closers,
): Promise<EventPublisher> {
  // Each adapter by the one composition rule (compose): the variable, else the override, else the local default.
  const { adapter: publisher, chosen } = await compose<EventPublisher>({
    variable: config.AMQP_URL,
    fromVariable: async (url) => {
      const rabbit = new RabbitPublisher(url, logger, amqpTopology(config.AMQP_NAMESPACE));
      await rabbit.connect();
      // A broker outage loses no API_CALL: failed batches go to a bounded, fsync'd local spool and are
      // replayed in order when the broker is back; close() (SIGTERM) flushes the batcher into it.
      const dir = config.EVENT_SPOOL_DIR ?? defaultSpoolDir('gateway', config.AMQP_NAMESPACE, config.PORT);
      const spool = await SpoolingPublisher.open(rabbit, {
        dir,
        maxBytes: config.EVENT_SPOOL_MAX_MB * 1024 * 1024,
        logger,
      });
      // API_CALL events are many and small: one confirm round trip per batch, not per request.
      const batching = new BatchingPublisher(spool, {
        maxDelayMs: config.PUBLISH_BATCH_DELAY_MS,
        maxBatch: config.PUBLISH_BATCH_MAX,
      });
      // A SIGKILL loses no API_CALL of an answered call either: each is journaled (one synchronous
      // write) before the answer's last bytes go out, and replayed by the next start until settled.
      return JournaledPublisher.open(batching, { dir, logger });
    },
    override,
    local: () => {
      logger.warn('AMQP_URL not set: API_CALL events go to an in-process bus nothing consumes');
      return new InProcessBus(logger);
    },
  });
  if (chosen !== 'override') closers.add(() => publisher.close());
  return publisher;
}

/**
 * Embedded mode only: tokens of the in-process development issuer, before the configured issuers.
 * Only on a loopback listen address: on any other, every machine that reaches the port could sign in.
 */
async function wireDevSignIn(
  config: GatewayConfig,
  logger: Logger,
  wanted: boolean | undefined,
  deps: Omit<Parameters<typeof DevSignIn.create>[0], 'logger'>,
): Promise<DevSignIn | undefined> {
  const on = wanted === true && isLoopbackHost(config.HOST);
  if (wanted && !on)
    logger.warn(
      `development sign-in off: HOST=${config.HOST} is not a loopback address, and anyone who reaches the port could sign in as any subject`,
    );
  if (!on) return undefined;
  const devSignIn = await DevSignIn.create({ ...deps, logger });
  logger.warn(
    'development sign-in enabled (embedded mode, loopback only): anyone on this machine can act as any subject',
  );
  return devSignIn;
}

/**
 * compose's rule for the Redis-backed adapters: REDIS_URL (one server, a Sentinel deployment or a Cluster),
 * else the override, else the same adapter in memory.
 */
async function byRedisUrl<A>(
  config: GatewayConfig,
  redis: RedisTarget | undefined,
  override: A | undefined,
  create: (redis: RedisTarget | undefined) => Promise<A>,
): Promise<A> {
  const { adapter } = await compose({
    variable: config.REDIS_URL,
    fromVariable: () => create(redis),
    override,
    local: () => create(undefined),
  });
  return adapter;
}

/** Redis when REDIS_URL is set (shared by replicas, per-process insurance when it is down), else in memory. */
function wireLimiter(
  config: GatewayConfig,
  logger: Logger,
  opts: { redis: RedisTarget | undefined; override: GatewayDeps['limiter'] | undefined; closers: Closers },
): Promise<NonNullable<GatewayDeps['limiter']>> {
  return byRedisUrl(config, opts.redis, opts.override, async (target) => {
    const owned = await createLimiter(
      {
        redisUrl: target,
        prefix: redisKeySpaces(config.REDIS_PREFIX).rateLimits,
        overrides: config.PLAN_OVERRIDES,
        authFailuresPerMinute: config.AUTH_FAILURE_LIMIT_PER_MINUTE,
      },
      logger,
    );
    opts.closers.add(() => owned.close());
    return owned;
  });
}

/** Idempotency-Key records: Redis when REDIS_URL is set (shared by replicas), else in memory. */
function wireIdempotency(
  config: GatewayConfig,
  logger: Logger,
  opts: { redis: RedisTarget | undefined; overrides: Overrides; closers: Closers },
): Promise<NonNullable<GatewayDeps['idempotency']>> {
  return byRedisUrl(config, opts.redis, opts.overrides.idempotency, async (target) => {
    const owned = await createIdempotency(
      {
        redisUrl: target,
        prefix: redisKeySpaces(config.REDIS_PREFIX).idempotency,
        ttlMs: config.IDEMPOTENCY_TTL_SECONDS * 1000,
        waitMs: config.IDEMPOTENCY_WAIT_MS,
        trustProxy: opts.overrides.trustProxy ?? config.TRUST_PROXY,
      },
      logger,
    );
    opts.closers.add(() => owned.store.close());
    return owned;
  });
}

/**
 * The dashboard's OIDC sign-in from DASHBOARD_OIDC_* (docs/DASHBOARD.md): the issuer and the
 * client id both or neither. Its tokens are accepted only through a JWT_ISSUERS entry for that
 * issuer: without one, a warning (every sign-in would end in 401).
 */
export function dashboardOidc(config: GatewayConfig, logger: Logger): DashboardOidc | undefined {
  const { DASHBOARD_OIDC_ISSUER: issuer, DASHBOARD_OIDC_CLIENT_ID: clientId } = config;
  if (!issuer && !clientId) return undefined;
  if (!issuer || !clientId)
    throw configError(
      issuer ? 'DASHBOARD_OIDC_CLIENT_ID' : 'DASHBOARD_OIDC_ISSUER',
      'DASHBOARD_OIDC_ISSUER and DASHBOARD_OIDC_CLIENT_ID are set together, or neither',
    );
  if (!parseJwtIssuers(config.JWT_ISSUERS).some((i) => i.issuer === issuer))
    logger.warn(
      { issuer },
      'DASHBOARD_OIDC_ISSUER is not in JWT_ISSUERS: the gateway refuses the tokens of the dashboard OIDC sign-in',
    );
  return {
    issuer,
    client_id: clientId,
    scope: config.DASHBOARD_OIDC_SCOPE,
    ...(config.DASHBOARD_OIDC_AUDIENCE ? { audience: config.DASHBOARD_OIDC_AUDIENCE } : {}),
  };
}
