import {
  BatchingPublisher,
  InProcessBus,
  RabbitPublisher,
  ServiceClient,
  amqpTopology,
  internalTokens,
  type EventPublisher,
  type Logger,
} from '@mandate/shared';
import type { GatewayDeps, Upstreams } from './app';
import { CachedKeyResolver } from './auth/key-resolver';
import type { GatewayConfig } from './config';
import { buildPublicOpenApi } from './openapi';

/** Builds the gateway's dependencies; each configured URL switches its adapter. */
export async function wire(
  config: GatewayConfig,
  logger: Logger,
  overrides: Partial<GatewayDeps> = {},
): Promise<{ deps: GatewayDeps; close(): Promise<void> }> {
  const closers: (() => Promise<void>)[] = [];

  const tokens = overrides.tokens ?? (config.INTERNAL_TOKEN_SECRET ? internalTokens(config.INTERNAL_TOKEN_SECRET) : undefined);
  if (!tokens) throw new Error('INTERNAL_TOKEN_SECRET is required');
  const operatorToken = overrides.operatorToken ?? config.OPERATOR_TOKEN;
  if (!operatorToken) throw new Error('OPERATOR_TOKEN is required');

  let upstreams = overrides.upstreams;
  if (!upstreams) {
    const client = (name: string, urls: string[] | undefined) => {
      if (!urls) throw new Error(`${name}_URL is required (comma-separated replicas)`);
      const c = new ServiceClient(urls);
      closers.push(() => c.close());
      return c;
    };
    upstreams = {
      mandates: client('MANDATES', config.MANDATES_URL),
      verify: client('VERIFY', config.VERIFY_URL),
      identity: client('IDENTITY', config.IDENTITY_URL),
      audit: client('AUDIT', config.AUDIT_URL),
    } satisfies Upstreams;
    logger.info(
      { mandates: config.MANDATES_URL, verify: config.VERIFY_URL, identity: config.IDENTITY_URL, audit: config.AUDIT_URL },
      'forwarding to upstream services',
    );
  }

  let publisher: EventPublisher | undefined = overrides.publisher;
  if (config.AMQP_URL) {
    const rabbit = new RabbitPublisher(config.AMQP_URL, logger, amqpTopology(config.AMQP_NAMESPACE));
    await rabbit.connect();
    // API_CALL events are many and small: one confirm round trip per batch, not per request.
    publisher = new BatchingPublisher(rabbit, { maxDelayMs: 5, maxBatch: 200 });
  } else if (!publisher) {
    publisher = new InProcessBus(logger);
    logger.warn('AMQP_URL not set: API_CALL events go to an in-process bus nothing consumes');
  }
  if (publisher !== overrides.publisher) {
    const owned = publisher;
    closers.push(() => owned.close());
  }

  const keys = overrides.keys ?? new CachedKeyResolver(upstreams.identity, tokens, config.KEY_CACHE_TTL_MS);

  const deps: GatewayDeps = {
    tokens,
    logger,
    publisher,
    upstreams,
    keys,
    operatorToken,
    openApiDocument: overrides.openApiDocument ?? buildPublicOpenApi,
    readiness: overrides.readiness,
    jwt: overrides.jwt,
  };
  return {
    deps,
    async close() {
      for (const close of closers.reverse()) await close();
    },
  };
}
