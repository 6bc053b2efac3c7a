import { randomBytes } from 'node:crypto';
import type { Connection } from 'mongoose';
import { type Logger } from '@mandate/shared/observability';
import {
  InProcessBus,
  RabbitPublisher,
  RabbitEventSource,
  amqpTopology,
  type EventPublisher,
  type EventSource,
} from '@mandate/shared/events';
import { connectMongo } from '@mandate/shared/data';
import { type OutboundLookup } from '@mandate/shared/http';
import { compose, tokensFor, wireWith } from '@mandate/shared/service';
import type { Deps } from './deps';
import type { AuditConfig } from './config';
import { HttpMandatesSource, type MandatesSource } from './evidence/mandates-source';
import type { AuditStore } from './store/event-store';
import { FileEventStore } from './store/file-event-store';
import { MemoryEventStore } from './store/memory-event-store';
import { MongoEventStore } from './store/mongo-event-store';
import { MemoryWebhookStore } from './webhooks/memory-webhook-store';
import { MongoWebhookStore } from './webhooks/mongo-webhook-store';
import { secretBox } from './webhooks/secret-box';
import type { WebhookStore } from './webhooks/webhook-store';

/** What a caller may pass instead of an adapter (the embedded launcher its bus, tests their doubles). */
export type AuditOverrides = Partial<Omit<Deps, 'webhooks'>> & {
  /** Where the events of webhook endpoint changes go without AMQP_URL (the embedded mode's bus). */
  publisher?: EventPublisher;
  webhookStore?: WebhookStore;
  /** The webhook fan-out's source without AMQP_URL; defaults to `source`. */
  webhookSource?: EventSource;
  /** Resolves receivers' names (tests stub DNS). */
  webhookLookup?: OutboundLookup;
  webhookRandom?: () => number;
};

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
  overrides: AuditOverrides = {},
): Promise<Wired> {
  const log = overrides.logger ?? logger;
  // What it built is closed by close(), or at once when a later step fails (wireWith).
  return wireWith(
    async (closers) => {
      let connection: Connection | undefined;
      // Each adapter by the one composition rule (compose): the variable, else the override, else the local default.
      const { adapter: store } = await compose<AuditStore>({
        variable: config.MONGO_URL,
        fromVariable: async (url) => {
          const opened = await connectMongo(url, config.MONGO_DB, log);
          connection = opened;
          closers.add(() => opened.close());
          const mongoStore = new MongoEventStore(opened);
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

      // The audit consumer's queue, or the webhooks' own copy of every event.
      const rabbitSource = (url: string, queue: 'audit' | 'webhooks') =>
        new RabbitEventSource({
          url,
          logger: log,
          topology: amqpTopology(config.AMQP_NAMESPACE),
          prefetch: config.AUDIT_PREFETCH,
          queue,
        });
      const { adapter: source } = await compose<EventSource>({
        variable: config.AMQP_URL,
        fromVariable: (url) => rabbitSource(url, 'audit'),
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

      // Webhooks: the deliveries next to the events (MongoDB, else memory), the webhook queue (its own
      // copy of every event), and a publisher for the events of endpoint changes.
      const deliveryRetentionMs = config.WEBHOOKS_DELIVERY_RETENTION_DAYS * 86_400_000;
      const { adapter: webhookStore } = await compose<WebhookStore>({
        variable: config.MONGO_URL,
        fromVariable: async () => {
          const mongoStore = new MongoWebhookStore(connection!, deliveryRetentionMs);
          await mongoStore.init();
          return mongoStore;
        },
        override: overrides.webhookStore,
        local: () => {
          log.warn('webhook deliveries are in memory: pending ones are lost on restart');
          return new MemoryWebhookStore(deliveryRetentionMs);
        },
      });
      const { adapter: webhookSource } = await compose<EventSource>({
        variable: config.AMQP_URL,
        fromVariable: (url) => rabbitSource(url, 'webhooks'),
        override: overrides.webhookSource,
        // The same in-process bus as the audit consumer's: it hands every event to each of its consumers.
        local: () => source,
      });
      const { adapter: publisher } = await compose<EventPublisher>({
        variable: config.AMQP_URL,
        fromVariable: async (url) => {
          // Connects on the first publish: a broker down at start delays the relay, not the service.
          const ownPublisher = new RabbitPublisher(url, log, amqpTopology(config.AMQP_NAMESPACE));
          closers.add(() => ownPublisher.close());
          return ownPublisher;
        },
        override: overrides.publisher,
        local: () => (source instanceof InProcessBus ? source : new InProcessBus(log)),
      });
      if (!config.INTERNAL_TOKEN_SECRET)
        log.warn('no INTERNAL_TOKEN_SECRET: webhook secrets are sealed with a key of this process only');

      return {
        store,
        source,
        tokens,
        logger: log,
        mandates,
        clock: overrides.clock,
        checkpointSeconds: config.AUDIT_CHECKPOINT_SECONDS,
        webhooks: {
          store: webhookStore,
          source: webhookSource,
          publisher,
          box: secretBox(config.INTERNAL_TOKEN_SECRET ?? randomBytes(32).toString('hex')),
          random: overrides.webhookRandom,
          settings: {
            allowLoopback: config.WEBHOOKS_ALLOW_LOOPBACK,
            lookup: overrides.webhookLookup,
            timeoutMs: config.WEBHOOKS_TIMEOUT_MS,
            retryScheduleSeconds: config.WEBHOOKS_RETRY_SCHEDULE,
            disableAfterMs: config.WEBHOOKS_DISABLE_AFTER_HOURS * 3600 * 1000,
            concurrency: config.WEBHOOKS_CONCURRENCY,
            pollMs: config.WEBHOOKS_POLL_MS,
          },
        },
      };
    },
    (err) => log.warn({ err }, 'audit: closing a dependency failed'),
  );
}
