import type { Express } from 'express';
import {
  OutboxRelay,
  baseApp,
  systemClock,
  errorMiddleware,
  healthRoutes,
  jsonBody,
  listen,
  notFoundHandler,
  requireInternalToken,
  type Clock,
  type EventPublisher,
  type EventSource,
  type InternalTokens,
  type Logger,
  type AppLifecycle,
  type RunningServer,
} from '@mandate/shared';
import { startAuditConsumer, type AuditConsumer } from './consumers/audit-consumer';
import type { MandatesSource } from './evidence/mandates-source';
import { evidenceRoutes } from './http/evidence-routes';
import { eventRoutes } from './http/routes';
import { webhookRoutes } from './http/webhook-routes';
import type { EventStore } from './store/event-store';
import type { WebhookDeps } from './webhooks/endpoints';
import { startWebhookFanout, type WebhookFanout } from './webhooks/fanout';
import type { SecretBox } from './webhooks/secret-box';
import type { WebhookStore } from './webhooks/webhook-store';
import { DeliveryWorker, type WebhookSettings } from './webhooks/worker';

/** Outbound webhooks (the endpoints API, the fan-out of the webhook queue, the delivery worker). */
export interface WebhookParts {
  store: WebhookStore;
  /** The webhook queue (RabbitMQ), or the embedded mode's in-process bus. */
  source: EventSource;
  /** Where the events of endpoint changes go (relayed from the store's outbox). */
  publisher: EventPublisher;
  box: SecretBox;
  settings: WebhookSettings;
  /** Jitter source of the retry schedule (tests pin it). */
  random?: () => number;
}

export interface Deps {
  store: EventStore;
  /** Where audit events come from: RabbitMQ, or the embedded mode's InProcessBus. */
  source: EventSource;
  tokens: InternalTokens;
  logger: Logger;
  /** The mandates service, for the evidence export (MANDATES_URL); absent → the export answers 503. */
  mandates?: MandatesSource;
  clock?: Clock;
  /** Absent: no webhook routes, fan-out or worker (component tests of the events alone). */
  webhooks?: WebhookParts;
}

/**
 * start() listens, then starts consuming; if the consumer cannot start, the server is closed again
 * and the error thrown. stop() stops consuming first (in-flight events are written and acked), then
 * closes the HTTP server.
 */
export interface AuditService extends AppLifecycle {
  app: Express;
  /** The delivery worker (tests under an injected clock drive it with runDue). */
  webhookWorker?: DeliveryWorker;
}

export function createApp(deps: Deps): AuditService {
  const { store, source, tokens, logger } = deps;
  let consumer: AuditConsumer | undefined;
  let server: RunningServer | undefined;

  const app = baseApp('audit');
  healthRoutes(app, async () => ({
    consumer: consumer ? (consumer.state === 'running' ? 'ok' : consumer.state) : 'not started',
    store: await store.ping().then(
      () => 'ok',
      (err: unknown) => `down: ${err instanceof Error ? err.message : String(err)}`,
    ),
  }));
  app.use('/v1', requireInternalToken(tokens, 'audit'));
  app.use(eventRoutes(store));
  app.use(evidenceRoutes({ store, tokens, mandates: deps.mandates, logger, clock: deps.clock }));
  const webhooks = deps.webhooks && webhookDeps(deps.webhooks, deps.clock ?? systemClock, logger);
  if (webhooks) app.use(jsonBody(), webhookRoutes(webhooks));
  let fanout: WebhookFanout | undefined;
  app.use(notFoundHandler());
  app.use(errorMiddleware(logger));

  return {
    app,
    webhookWorker: webhooks?.worker,
    async start(port = 0, host = '127.0.0.1') {
      const running = await listen(app, port, host);
      try {
        consumer = await startAuditConsumer(source, store, logger);
        if (webhooks && deps.webhooks) {
          webhooks.relay.start();
          webhooks.worker.start();
          fanout = await startWebhookFanout(deps.webhooks.source, {
            store: webhooks.store,
            clock: webhooks.clock,
            logger,
            onStored: () => webhooks.worker.kick(),
          });
        }
      } catch (err) {
        await consumer?.stop();
        await running.close();
        throw err;
      }
      server = running;
      return running;
    },
    async stop() {
      await consumer?.stop();
      // The fan-out stores what it was handed, the worker finishes its attempts, the relay publishes last.
      await fanout?.stop();
      await webhooks?.worker.stop();
      await webhooks?.relay.stop();
      await server?.close();
      server = undefined;
    },
  };
}

function webhookDeps(
  parts: WebhookParts,
  clock: Clock,
  logger: Logger,
): WebhookDeps & { relay: OutboxRelay } {
  const relay = new OutboxRelay(parts.store, parts.publisher, logger);
  const worker = new DeliveryWorker({
    store: parts.store,
    box: parts.box,
    relay,
    clock,
    logger,
    settings: parts.settings,
    random: parts.random,
  });
  return { store: parts.store, box: parts.box, relay, clock, settings: parts.settings, worker };
}
