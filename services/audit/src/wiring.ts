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
import { compose, tokensFor, wireWith, type Closers } from '@mandate/shared/service';
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
      const ctx: WireContext = { config, log, closers };
      const { store, connection } = await wireStore(ctx, overrides.store);
      const source = await wireSource(ctx, overrides.source);
      const tokens = tokensFor(config.INTERNAL_TOKEN_SECRET, overrides.tokens);
      const mandates = await wireMandates(ctx, overrides.mandates);
      const webhooks = await wireWebhooks(ctx, { connection, source, overrides });
      return {
        store,
        source,
        tokens,
        logger: log,
        mandates,
        clock: overrides.clock,
        checkpointSeconds: config.AUDIT_CHECKPOINT_SECONDS,
        webhooks,
      };
    },
    (err) => log.warn({ err }, 'audit: closing a dependency failed'),
  );
}

/** What every wire* helper below needs. */
interface WireContext {
  config: AuditConfig;
  log: Logger;
  closers: Closers;
}

/**
 * The event store: MongoDB when MONGO_URL is set (its connection is shared with the webhook
 * store), else the override, else memory, journaled to AUDIT_STORE_FILE when set.
 */
async function wireStore(
  { config, log, closers }: WireContext,
  override: AuditStore | undefined,
): Promise<{ store: AuditStore; connection?: Connection }> {
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
    override,
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
  return { store, connection };
}

/** The audit consumer's queue, or the webhooks' own copy of the events of the types `routes` names. */
function rabbitSource(
  { config, log }: WireContext,
  url: string,
  queue: 'audit' | 'webhooks',
  routes?: () => Promise<readonly string[]>,
): EventSource {
  return new RabbitEventSource({
    url,
    logger: log,
    topology: amqpTopology(config.AMQP_NAMESPACE),
    prefetch: config.AUDIT_PREFETCH,
    queue,
    routes,
  });
}

/** The audit consumer's events: RabbitMQ when AMQP_URL is set, else the override, else a private bus. */
async function wireSource(ctx: WireContext, override: EventSource | undefined): Promise<EventSource> {
  const { adapter: source } = await compose<EventSource>({
    variable: ctx.config.AMQP_URL,
    fromVariable: (url) => rabbitSource(ctx, url, 'audit'),
    override,
    local: () => {
      ctx.log.warn('no AMQP_URL and no shared bus: the audit consumer will receive nothing');
      return new InProcessBus(ctx.log);
    },
  });
  return source;
}

/** The evidence export's mandates: the mandates service from MANDATES_URL, else the override, else none. */
async function wireMandates(
  { config, log, closers }: WireContext,
  override: MandatesSource | undefined,
): Promise<MandatesSource | undefined> {
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
    override,
    local: () => {
      log.warn('no MANDATES_URL: the evidence export answers 503');
      return undefined;
    },
  });
  return mandates;
}

/**
 * Webhooks: the deliveries next to the events (MongoDB, else memory), the webhook queue (its own
 * copy of every event), and a publisher for the events of endpoint changes.
 */
async function wireWebhooks(
  ctx: WireContext,
  parts: { connection?: Connection; source: EventSource; overrides: AuditOverrides },
): Promise<NonNullable<Deps['webhooks']>> {
  const { config, log } = ctx;
  const { source, overrides } = parts;
  const webhookStore = await wireWebhookStore(ctx, parts.connection, overrides.webhookStore);
  const { adapter: webhookSource } = await compose<EventSource>({
    variable: config.AMQP_URL,
    fromVariable: (url) => rabbitSource(ctx, url, 'webhooks', () => webhookStore.subscribedTypes()),
    override: overrides.webhookSource,
    // The same in-process bus as the audit consumer's: it hands every event to each of its consumers.
    local: () => source,
  });
  const { adapter: publisher } = await compose<EventPublisher>({
    variable: config.AMQP_URL,
    fromVariable: async (url) => {
      // Connects on the first publish: a broker down at start delays the relay, not the service.
      const ownPublisher = new RabbitPublisher(url, log, amqpTopology(config.AMQP_NAMESPACE));
      ctx.closers.add(() => ownPublisher.close());
      return ownPublisher;
    },
    override: overrides.publisher,
    local: () => (source instanceof InProcessBus ? source : new InProcessBus(log)),
  });
  if (!config.INTERNAL_TOKEN_SECRET)
    log.warn('no INTERNAL_TOKEN_SECRET: webhook secrets are sealed with a key of this process only');
  return {
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
  };
}

/**
 * The deliveries: in MongoDB over the event store's connection (there is one exactly when
 * MONGO_URL is set), else the override, else memory.
 */
async function wireWebhookStore(
  { config, log }: WireContext,
  connection: Connection | undefined,
  override: WebhookStore | undefined,
): Promise<WebhookStore> {
  const deliveryRetentionMs = config.WEBHOOKS_DELIVERY_RETENTION_DAYS * 86_400_000;
  const { adapter } = await compose<WebhookStore, Connection>({
    variable: connection,
    fromVariable: async (opened) => {
      const mongoStore = new MongoWebhookStore(opened, deliveryRetentionMs);
      await mongoStore.init();
      return mongoStore;
    },
    override,
    local: () => {
      log.warn('webhook deliveries are in memory: pending ones are lost on restart');
      return new MemoryWebhookStore(deliveryRetentionMs);
    },
  });
  return adapter;
}
