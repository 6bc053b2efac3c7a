import { CachedTokenMinter, appLifecycle, internalServiceApp, type AppLifecycle } from '@mandate/shared';
import type { Express } from 'express';
import { VerifyMetrics } from './metrics';
import { verifyRoutes } from './http/routes';
import { verifyHotPath } from './http/hot-path';
import { authzenRoutes } from './http/authzen-routes';

export interface VerifyApp extends AppLifecycle {
  app: Express;
}

import type { AppDeps, Deps } from './deps';
export type { Deps };

/** Builds the express app; nothing listens until start(). Closing deps is the wiring's job. */
export function createApp(given: Deps): VerifyApp {
  // One set of counters for the express routes and the hot path.
  const deps: AppDeps = {
    ...given,
    metrics: given.metrics ?? new VerifyMetrics(),
    mandatesTokens: given.mandatesTokens ?? new CachedTokenMinter(given.tokens),
  };
  const app = internalServiceApp('verify', {
    readiness: async () => ({ mandates: await deps.reader.check() }),
    tokens: deps.tokens,
    logger: deps.logger,
    handlers: [verifyRoutes(deps), authzenRoutes(deps)],
  });
  // POST /v1/verify is answered without express; everything else (and anything unusual) goes to the app.
  const handler = verifyHotPath(deps, deps.metrics, app);

  return { app, ...appLifecycle(handler) };
}
