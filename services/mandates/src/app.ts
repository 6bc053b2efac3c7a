import type { NextFunction, Request, Response } from 'express';
import { AppError } from '@mandate/shared/core';
import { ownRelayUnlessGiven } from '@mandate/shared/events';
import { internalServiceApp } from '@mandate/shared/http';
import { outboxAppLifecycle } from '@mandate/shared/service';
import { internalSigningRoutes } from './http/internal-signing';
import { mandateRoutes } from './http/routes';
import { budgetRoutes } from './http/budget-routes';
import { ExpirySweeper } from './sweeper/expiry-sweeper';
import { AuthorizationSweeper } from './sweeper/authorization-sweeper';
import { StatusLists } from './status-lists/status-lists';
import { statusListRoutes } from './status-lists/routes';

import type { Deps } from './deps';
export type { Deps };

/** Builds the express app; nothing listens until start(). */
export function createApp(given: Deps) {
  // Every change stores its events in the outbox; this relay publishes them (and retries until the broker confirms).
  const ownRelay = ownRelayUnlessGiven(given);
  // Set on the given object (not a copy): callers and tests may swap a dependency of a running app.
  const deps: Deps = given;
  deps.relay ??= ownRelay;
  deps.statusLists ??= new StatusLists({
    store: deps.store,
    signer: deps.signer,
    clock: deps.clock,
    relay: deps.relay,
    logger: deps.logger,
    publicBaseUrl: deps.publicBaseUrl ?? 'http://127.0.0.1:8080',
    ttlSeconds: deps.statusListTtlSeconds ?? 60,
  });
  const app = internalServiceApp('mandates', {
    readiness: async () => {
      const checks: Record<string, string> = {};
      const probe = (name: string, ping: () => Promise<unknown>) =>
        ping().then(
          () => (checks[name] = 'ok'),
          (err) => (checks[name] = `down: ${String((err as Error)?.message ?? err)}`),
        );
      const { store, signer, snapshots } = deps;
      await probe(`store:${store.kind}`, () => store.ping());
      await probe('signer', () => signer.publicJwks());
      if (snapshots && snapshots.kind !== 'none')
        await probe(`snapshots:${snapshots.kind}`, () => snapshots.ping());
      return checks;
    },
    tokens: deps.tokens,
    logger: deps.logger,
    handlers: [
      mandateRoutes(deps),
      budgetRoutes(deps),
      statusListRoutes(deps.statusLists),
      internalSigningRoutes(deps),
      // errorMiddleware logs only unknown errors; a 5xx AppError (signing down) deserves a log line with its cause too.
      (err: unknown, req: Request, _res: Response, next: NextFunction) => {
        if (err instanceof AppError && err.status >= 500) {
          deps.logger.error({ err, cause: err.cause, requestId: req.requestId }, err.message);
        }
        next(err);
      },
    ],
  });

  const sweeper = deps.sweepIntervalMs
    ? new ExpirySweeper(deps, { intervalMs: deps.sweepIntervalMs })
    : undefined;
  const authorizationSweeper = deps.sweepIntervalMs
    ? new AuthorizationSweeper(deps, { intervalMs: deps.sweepIntervalMs })
    : undefined;
  return {
    sweeper,
    authorizationSweeper,
    ...outboxAppLifecycle(app, ownRelay, [sweeper, authorizationSweeper]),
  };
}

export type MandatesApp = ReturnType<typeof createApp>;
