import { type InternalTokens } from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import { amqpTopology, type EventHandler } from '@mandate/shared/events';
import { RabbitSubscriber } from './rabbit-subscriber';
import { type ServiceClient } from '@mandate/shared/http';
import type { JwtAuthenticator } from './authenticate';
import { CredentialEpochCheck, isCredentialCache } from './credential-epoch';
import { CREDENTIAL_EVENT_TYPES, credentialEventHandler } from './credential-events';
import { JoseJwtAuthenticator, parseJwtIssuers } from './jwt';
import { CachedKeyResolver, type KeyResolver } from './key-resolver';
import { CachedSubjectResolver } from './subject-resolver';
import { UsableKeys, identityUsableKeys } from './usable-keys';

/** How often the keys served from the cache are reported to identity (last_used_at has a one-minute resolution). */
const KEY_USE_REPORT_MS = 60_000;

export interface CredentialConfig {
  AMQP_URL?: string;
  AMQP_NAMESPACE: string;
  KEY_CACHE_TTL_MS: number;
  CREDENTIAL_CHECK_INTERVAL_MS?: number;
  JWT_ISSUERS?: string;
}

/** Where key and role events come from without RabbitMQ: the embedded mode's in-process bus. */
export interface CredentialEventSource {
  subscribe(eventTypes: readonly string[], handler: EventHandler): Promise<void>;
}

/**
 * The gateway's credential checks: the cached key resolver, the JWT authenticator when
 * JWT_ISSUERS names issuers, a per-process subscription to key and role events that evicts
 * cached resolutions at once on every replica — over RabbitMQ, or in embedded mode over the
 * in-process bus — and identity's credential feed, or while it is silent the credential epoch
 * check every CREDENTIAL_CHECK_INTERVAL_MS, which catch what the subscription missed and keep the
 * rest trusted (docs/DECISIONS.md, "Credential changes"). While the check fails, KEY_CACHE_TTL_MS bounds how long a revoked key or
 * role still works.
 */
export async function wireCredentials(
  config: CredentialConfig,
  deps: {
    identity: ServiceClient;
    tokens: InternalTokens;
    logger: Logger;
    events?: CredentialEventSource;
  },
  overrides: { keys?: KeyResolver; jwt?: JwtAuthenticator } = {},
): Promise<{
  keys: KeyResolver;
  /** Identity's usable keys, kept by the same push and check (absent with an overriding KeyResolver). */
  usableKeys?: UsableKeys;
  jwt?: JwtAuthenticator;
  subjects: CachedSubjectResolver;
  /** The credential epoch check (started here; stopped by close). */
  check: CredentialEpochCheck;
  close(): Promise<void>;
}> {
  const { identity, tokens, logger } = deps;
  const keys = overrides.keys ?? new CachedKeyResolver(identity, tokens, config.KEY_CACHE_TTL_MS, logger);
  const subjects = new CachedSubjectResolver(identity, tokens, config.KEY_CACHE_TTL_MS, logger);
  const usableKeys = overrides.keys
    ? undefined
    : new UsableKeys(identityUsableKeys(identity, tokens, logger), logger);

  const jwt = overrides.jwt ?? jwtAuthenticator(config, subjects, logger);
  const subscriber = await subscribeToCredentialEvents(
    config,
    deps,
    credentialEventHandler(keys, subjects, usableKeys),
  );

  // An overriding KeyResolver (tests) may keep no cache: only the caches are checked.
  const caches = ([keys, subjects, usableKeys] as unknown[]).filter(isCredentialCache);
  const interval = Math.max(
    10,
    Math.min(config.CREDENTIAL_CHECK_INTERVAL_MS ?? 250, Math.floor(config.KEY_CACHE_TTL_MS / 2)),
  );
  const check = new CredentialEpochCheck(identity, tokens, caches, interval, logger, Date.now, {
    feed: true,
  });
  check.start();
  // Read before the first blocked address needs it; a failure is logged and the next need reads again.
  void usableKeys?.refresh();
  const reportUse =
    keys instanceof CachedKeyResolver
      ? setInterval(() => {
          keys.reportUse().catch((err) => logger.warn({ err }, 'reporting key use failed'));
        }, KEY_USE_REPORT_MS)
      : undefined;
  reportUse?.unref();

  return {
    keys,
    usableKeys,
    jwt,
    subjects,
    check,
    async close() {
      await check.stop();
      clearInterval(reportUse);
      await subscriber?.stop();
    },
  };
}

/** The JWT authenticator when JWT_ISSUERS names issuers. */
function jwtAuthenticator(
  config: CredentialConfig,
  subjects: CachedSubjectResolver,
  logger: Logger,
): JwtAuthenticator | undefined {
  const issuers = parseJwtIssuers(config.JWT_ISSUERS);
  if (issuers.length === 0) return undefined;
  const jwt = new JoseJwtAuthenticator(issuers, subjects);
  logger.info(
    { issuers: issuers.map((i) => ({ name: i.name, issuer: i.issuer, scheme: i.subject_scheme })) },
    'JWT callers accepted',
  );
  return jwt;
}

/**
 * Key and role events evict cached credentials: over RabbitMQ, else over the embedded mode's bus,
 * else not at all (the TTL and the epoch check bound them). The RabbitMQ subscriber is returned to be stopped.
 */
async function subscribeToCredentialEvents(
  config: CredentialConfig,
  deps: { logger: Logger; events?: CredentialEventSource },
  handler: EventHandler,
): Promise<RabbitSubscriber | undefined> {
  const { logger } = deps;
  if (config.AMQP_URL) {
    const subscriber = new RabbitSubscriber({
      url: config.AMQP_URL,
      logger,
      topology: amqpTopology(config.AMQP_NAMESPACE),
      eventTypes: CREDENTIAL_EVENT_TYPES,
      name: 'gateway-credential-cache',
    });
    await subscriber.start(handler);
    return subscriber;
  }
  if (deps.events) await deps.events.subscribe(CREDENTIAL_EVENT_TYPES, handler);
  else
    logger.warn(
      { ttlMs: config.KEY_CACHE_TTL_MS },
      'AMQP_URL not set: cached keys and roles expire by TTL only',
    );
  return undefined;
}
