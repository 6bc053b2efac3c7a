import type { Express } from 'express';
import {
  baseApp,
  errorMiddleware,
  healthRoutes,
  listen,
  notFoundHandler,
  requireInternalToken,
  type AppLifecycle,
  type RunningServer,
} from '@mandate/shared';
import { startAuditConsumer, type AuditConsumer } from './consumers/audit-consumer';
import { evidenceRoutes } from './http/evidence-routes';
import { eventRoutes } from './http/routes';

/**
 * start() listens, then starts consuming; if the consumer cannot start, the server is closed again
 * and the error thrown. stop() stops consuming first (in-flight events are written and acked), then
 * closes the HTTP server.
 */
export interface AuditService extends AppLifecycle {
  app: Express;
}

import type { Deps } from './deps';
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
  app.use(notFoundHandler());
  app.use(errorMiddleware(logger));

  return {
    app,
    async start(port = 0, host = '127.0.0.1') {
      const running = await listen(app, port, host);
      try {
        consumer = await startAuditConsumer(source, store, logger);
      } catch (err) {
        await running.close();
        throw err;
      }
      server = running;
      return running;
    },
    async stop() {
      await consumer?.stop();
      await server?.close();
      server = undefined;
    },
  };
}
