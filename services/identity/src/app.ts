import {
  baseApp,
  errorMiddleware,
  healthRoutes,
  jsonBody,
  listen,
  notFoundHandler,
  OutboxRelay,
  requireInternalToken,
  type Clock,
  type EventPublisher,
  type InternalTokens,
  type Logger,
  type RunningServer,
} from '@mandate/shared';
import { Identity } from './domain/identity';
import { internalRoutes, publicRoutes } from './http/routes';
import type { IdentityStore } from './store/identity-store';

export interface Deps {
  store: IdentityStore;
  publisher: EventPublisher;
  tokens: InternalTokens;
  logger: Logger;
  clock: Clock;
  /** How often the outbox relay looks for events the fast path missed (broker down, restart); default 1 s. */
  outboxPollIntervalMs?: number;
}

export function createApp(deps: Deps) {
  // Every write stores its events in the outbox; this relay publishes them until the broker confirms.
  const relay = new OutboxRelay(deps.store, deps.publisher, deps.logger, {
    pollIntervalMs: deps.outboxPollIntervalMs,
  });
  const identity = new Identity(deps.store, deps.clock, relay);
  const app = baseApp();
  healthRoutes(app, async () => {
    const checks: Record<string, string> = {};
    try {
      await deps.store.ping();
      checks.store = 'ok';
    } catch (err) {
      checks.store = `down: ${(err as Error).message}`;
    }
    checks.publisher = 'ok';
    return checks;
  });
  app.use(requireInternalToken(deps.tokens, 'identity'));
  app.use(jsonBody());
  app.use(publicRoutes(deps, identity));
  app.use(internalRoutes(deps, identity));
  app.use(notFoundHandler());
  app.use(errorMiddleware(deps.logger));

  let running: RunningServer | undefined;
  return {
    app,
    identity,
    relay,
    async start(port = 0, host = '127.0.0.1'): Promise<RunningServer> {
      running = await listen(app, port, host);
      relay.start();
      return running;
    },
    async stop(): Promise<void> {
      const server = running;
      running = undefined;
      await server?.close();
      // What the requests above stored is relayed now if the broker allows, else after the next start.
      await relay.stop();
    },
  };
}

export type IdentityApp = ReturnType<typeof createApp>;
