import {
  InProcessBus,
  RabbitPublisher,
  amqpTopology,
  internalTokens,
  systemClock,
  type Logger,
} from '@mandate/shared';
import type { Deps } from './app';
import type { Config } from './config';
import { HttpMandateReader } from './mandates/http-mandate-reader';

/**
 * Builds the dependencies in one place. Each adapter is chosen by its setting unless the
 * caller (the embedded launcher, a test) passes its own.
 */
export async function wire(
  config: Config,
  logger: Logger,
  overrides: Partial<Deps> = {},
): Promise<{ deps: Deps; close(): Promise<void> }> {
  const owned: { close(): Promise<void> }[] = [];

  let reader = overrides.reader;
  if (!reader) {
    if (!config.MANDATES_URL)
      throw new Error('MANDATES_URL is required (comma-separated mandates service replicas)');
    reader = new HttpMandateReader({
      baseUrls: config.MANDATES_URL,
      logger,
      timeoutMs: config.MANDATES_TIMEOUT_MS,
    });
    owned.push(reader);
    logger.info({ mandates: config.MANDATES_URL }, 'mandates read over HTTP');
  }

  let publisher = overrides.publisher;
  if (config.AMQP_URL) {
    publisher = new RabbitPublisher(config.AMQP_URL, logger, amqpTopology(config.AMQP_NAMESPACE));
    owned.push(publisher);
  } else if (!publisher) {
    // Nothing consumes this bus in a standalone verify: events are only kept in memory.
    publisher = new InProcessBus(logger);
    owned.push(publisher);
    logger.warn('AMQP_URL not set: audit events go to an in-process bus');
  }

  let tokens = overrides.tokens;
  if (!tokens) {
    if (!config.INTERNAL_TOKEN_SECRET) throw new Error('INTERNAL_TOKEN_SECRET is required');
    tokens = internalTokens(config.INTERNAL_TOKEN_SECRET);
  }

  const deps: Deps = {
    reader,
    publisher,
    tokens,
    logger: overrides.logger ?? logger,
    clock: overrides.clock ?? systemClock,
  };
  return {
    deps,
    async close() {
      // Reverse order of creation; the caller closes whatever it passed in.
      for (const dep of owned.reverse()) await dep.close();
    },
  };
}
