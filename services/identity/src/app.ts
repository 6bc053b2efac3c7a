import {
  baseApp,
  errorMiddleware,
  healthRoutes,
  jsonBody,
  listen,
  notFoundHandler,
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
}

export function createApp(deps: Deps) {
  const identity = new Identity(deps.store, deps.clock);
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
  app.use(requireInternalToken(deps.tokens));
  app.use(jsonBody());
  app.use(publicRoutes(deps, identity));
  app.use(internalRoutes(deps, identity));
  app.use(notFoundHandler());
  app.use(errorMiddleware(deps.logger));

  let running: RunningServer | undefined;
  return {
    app,
    identity,
    async start(port = 0, host = '127.0.0.1'): Promise<RunningServer> {
      running = await listen(app, port, host);
      return running;
    },
    async stop(): Promise<void> {
      const server = running;
      running = undefined;
      await server?.close();
    },
  };
}

export type IdentityApp = ReturnType<typeof createApp>;
