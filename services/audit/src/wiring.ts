import {
  InProcessBus,
  RabbitEventSource,
  amqpTopology,
  compose,
  connectMongo,
  tokensFor,
  wireWith,
  type EventSource,
  type Logger,
} from '@mandate/shared';
import type { Deps } from './deps';
import type { AuditConfig } from './config';
import { HttpMandatesSource, type MandatesSource } from './evidence/mandates-source';
import type { EventStore } from './store/event-store';
import { FileEventStore } from './store/file-event-store';
import { MemoryEventStore } from './store/memory-event-store';
import { MongoEventStore } from './store/mongo-event-store';

export interface Wired {
  deps: Deps;
  /** Closes what wire() opened (the Mongo connection). The consumer is stopped by the app's stop(). */
  close(): Promise<void>;
}

/**
 * Builds the dependencies once, by the one composition rule (`compose`): MONGO_URL → MongoDB
 * (else the override, else memory, journaled to AUDIT_STORE_FILE when set), AMQP_URL → RabbitMQ
 * (else the override, e.g. the embedded mode's shared InProcessBus, else a private one that
 * nothing publishes to), MANDATES_URL → the mandates service (else the override, else none).
 */
export async function wire(
  config: AuditConfig,
  logger: Logger,
  overrides: Partial<Deps> = {},
): Promise<Wired> {
  const log = overrides.logger ?? logger;
  // What it built is closed by close(), or at once when a later step fails (wireWith).
  return wireWith(
    async (closers) => {
      // Each adapter by the one composition rule (compose): the variable, else the override, else the local default.
      const { adapter: store } = await compose<EventStore>({
        variable: config.MONGO_URL,
        fromVariable: async (url) => {
          const connection = await connectMongo(url, config.MONGO_DB, log);
          closers.add(() => connection.close());
          const mongoStore = new MongoEventStore(connection);
          await mongoStore.init();
          return mongoStore;
        },
        override: overrides.store,
        local: async () => {
          if (!config.AUDIT_STORE_FILE) {
            log.warn('audit store is in memory: events are lost on restart');
            return new MemoryEventStore();
          }
          const fileStore = await FileEventStore.open(config.AUDIT_STORE_FILE, log);
          closers.add(() => fileStore.close());
          log.warn(
            { file: config.AUDIT_STORE_FILE },
            'audit store is in memory, journaled to a local file (one process only)',
          );
          return fileStore;
        },
      });

      const { adapter: source } = await compose<EventSource>({
        variable: config.AMQP_URL,
        fromVariable: (url) =>
          new RabbitEventSource({
            url,
            logger: log,
            topology: amqpTopology(config.AMQP_NAMESPACE),
            prefetch: config.AUDIT_PREFETCH,
          }),
        override: overrides.source,
        local: () => {
          log.warn('no AMQP_URL and no shared bus: the audit consumer will receive nothing');
          return new InProcessBus(log);
        },
      });

      const tokens = tokensFor(config.INTERNAL_TOKEN_SECRET, overrides.tokens);

      const { adapter: mandates } = await compose<MandatesSource | undefined, string[]>({
        variable: config.MANDATES_URL,
        fromVariable: (baseUrls) => {
          const ownMandates = new HttpMandatesSource({
            baseUrls,
            logger: log,
            timeoutMs: config.MANDATES_TIMEOUT_MS,
          });
          closers.add(() => ownMandates.close());
          log.info(
            { mandatesUrl: baseUrls },
            'evidence export reads mandates, keys and signatures from the mandates service',
          );
          return ownMandates;
        },
        override: overrides.mandates,
        local: () => {
          log.warn('no MANDATES_URL: the evidence export answers 503');
          return undefined;
        },
      });

      return { store, source, tokens, logger: log, mandates, clock: overrides.clock };
    },
    (err) => log.warn({ err }, 'audit: closing a dependency failed'),
  );
}
