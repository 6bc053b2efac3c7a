import type { Express } from 'express';
import { PeriodicTask, systemClock, type Clock } from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import { OutboxRelay } from '@mandate/shared/events';
import {
  baseApp,
  errorMiddleware,
  healthRoutes,
  jsonBody,
  listen,
  notFoundHandler,
  requireInternalToken,
  type AppLifecycle,
  type RunningServer,
} from '@mandate/shared/http';
import { startAuditConsumer, type AuditConsumer } from './consumers/audit-consumer';
import { checkpointRound } from './domain/log';
import { checkpointSigner } from './evidence/checkpoint-signer';
import { evidenceRoutes } from './http/evidence-routes';
import { logRoutes } from './http/log-routes';
import { eventRoutes } from './http/routes';
import { webhookRoutes } from './http/webhook-routes';
import type { Deps, WebhookParts } from './deps';
import type { WebhookDeps } from './webhooks/endpoints';
import { startWebhookFanout, type WebhookFanout } from './webhooks/fanout';
import { DeliveryWorker } from './webhooks/worker';

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

export type { Deps };

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
  app.use(logRoutes(store));
  const checkpoints = checkpointTask(deps);
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
        checkpoints?.start();
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
      await checkpoints?.stop();
      // The fan-out stores what it was handed, the worker finishes its attempts, the relay publishes last.
      await fanout?.stop();
      await webhooks?.worker.stop();
      await webhooks?.relay.stop();
      await server?.close();
      server = undefined;
    },
  };
}

/**
 * Signed checkpoints of every grown tenant log (docs/API.md#proving-the-log), by the mandates
 * service's signer: none without it.
 */
function checkpointTask(deps: Deps): PeriodicTask | undefined {
  const { store, tokens, logger } = deps;
  const signerFor = deps.mandates && checkpointSigner(deps.mandates, tokens);
  if (!signerFor) return undefined;
  return new PeriodicTask(
    (deps.checkpointSeconds ?? 60) * 1000,
    () => checkpointRound(store, signerFor, deps.clock ?? systemClock, logger),
    (err) => logger.warn({ err }, 'audit checkpoint round failed'),
  );
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
  return {
    store: parts.store,
    source: parts.source,
    box: parts.box,
    relay,
    clock,
    settings: parts.settings,
    worker,
  };
}
