import {
  baseApp,
  errorMiddleware,
  healthRoutes,
  jsonBody,
  listen,
  notFoundHandler,
  OutboxRelay,
  PeriodicTask,
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
  /** How long a staging key may wait for activation; default STAGING_KEY_TTL_HOURS' default (168 h). */
  stagingKeyTtlMs?: number;
  /** While started, revoke expired staging keys this often; absent or 0 → no sweeper (resolve and activate still refuse them). */
  stagingSweepIntervalMs?: number;
}

export function createApp(deps: Deps) {
  // Every write stores its events in the outbox; this relay publishes them until the broker confirms.
  const relay = new OutboxRelay(deps.store, deps.publisher, deps.logger, {
    pollIntervalMs: deps.outboxPollIntervalMs,
  });
  const identity = new Identity(deps.store, deps.clock, relay, undefined, deps.stagingKeyTtlMs);
  // Every instance may sweep: the conditional revoke lets one of them win each key and announce it.
  const stagingSweeper = deps.stagingSweepIntervalMs
    ? new PeriodicTask(
        deps.stagingSweepIntervalMs,
        () => identity.expireStagingKeys(),
        (err) => deps.logger.warn({ err }, 'staging key sweep failed; retrying on the next tick'),
      )
    : undefined;
  const app = baseApp('identity');
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
      stagingSweeper?.start();
      return running;
    },
    async stop(): Promise<void> {
      const server = running;
      running = undefined;
      await server?.close();
      await stagingSweeper?.stop();
      // What the requests above stored is relayed now if the broker allows, else after the next start.
      await relay.stop();
    },
  };
}

export type IdentityApp = ReturnType<typeof createApp>;
