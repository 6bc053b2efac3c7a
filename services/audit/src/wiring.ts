import type { Connection } from 'mongoose';
import {
  InProcessBus,
  RabbitEventSource,
  amqpTopology,
  connectMongo,
  internalTokens,
  type Logger,
} from '@mandate/shared';
import type { Deps } from './app';
import type { AuditConfig } from './config';
import { HttpMandatesSource } from './evidence/mandates-source';
import { FileEventStore } from './store/file-event-store';
import { MemoryEventStore } from './store/memory-event-store';
import { MongoEventStore } from './store/mongo-event-store';

export interface Wired {
  deps: Deps;
  /** Closes what wire() opened (the Mongo connection). The consumer is stopped by the app's stop(). */
  close(): Promise<void>;
}

/**
 * Builds the dependencies once. Each configured URL switches its adapter: MONGO_URL → MongoDB
 * (else the override or memory), AMQP_URL → RabbitMQ (else the override, e.g. the embedded
 * mode's shared InProcessBus, or a private one that nothing publishes to).
 */
export async function wire(
  config: AuditConfig,
  logger: Logger,
  overrides: Partial<Deps> = {},
): Promise<Wired> {
  const log = overrides.logger ?? logger;
  let connection: Connection | undefined;
  let fileStore: FileEventStore | undefined;

  let store = overrides.store;
  if (config.MONGO_URL) {
    connection = await connectMongo(config.MONGO_URL, config.MONGO_DB, log);
    const mongoStore = new MongoEventStore(connection);
    await mongoStore.init();
    store = mongoStore;
  } else if (!store && config.AUDIT_STORE_FILE) {
    fileStore = await FileEventStore.open(config.AUDIT_STORE_FILE, log);
    store = fileStore;
    log.warn(
      { file: config.AUDIT_STORE_FILE },
      'audit store is in memory, journaled to a local file (one process only)',
    );
  } else if (!store) {
    store = new MemoryEventStore();
    log.warn('audit store is in memory: events are lost on restart');
  }

  let source = overrides.source;
  if (config.AMQP_URL) {
    source = new RabbitEventSource({
      url: config.AMQP_URL,
      logger: log,
      topology: amqpTopology(config.AMQP_NAMESPACE),
      prefetch: config.AUDIT_PREFETCH,
    });
  } else if (!source) {
    source = new InProcessBus(log);
    log.warn('no AMQP_URL and no shared bus: the audit consumer will receive nothing');
  }

  let tokens = overrides.tokens;
  if (!tokens) {
    if (!config.INTERNAL_TOKEN_SECRET) throw new Error('INTERNAL_TOKEN_SECRET is required');
    tokens = internalTokens(config.INTERNAL_TOKEN_SECRET);
  }

  let mandates = overrides.mandates;
  let ownMandates: HttpMandatesSource | undefined;
  if (config.MANDATES_URL) {
    ownMandates = new HttpMandatesSource({
      baseUrls: config.MANDATES_URL,
      logger: log,
      timeoutMs: config.MANDATES_TIMEOUT_MS,
    });
    mandates = ownMandates;
    log.info(
      { mandatesUrl: config.MANDATES_URL },
      'evidence export reads mandates, keys and signatures from the mandates service',
    );
  } else if (!mandates) {
    log.warn('no MANDATES_URL: the evidence export answers 503');
  }

  return {
    deps: { store, source, tokens, logger: log, mandates, clock: overrides.clock },
    async close() {
      await ownMandates?.close();
      await connection?.close();
      await fileStore?.close();
    },
  };
}
