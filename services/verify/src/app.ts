import { CachedTokenMinter } from '@mandate/shared/core';
import { appLifecycle, internalServiceApp, type AppLifecycle } from '@mandate/shared/http';
import type { Express } from 'express';
import { VerifyMetrics } from './metrics';
import { verifyRoutes } from './http/routes';
import { verifyRoute } from './http/verify-route';
import { withRequestMarks } from './http/request-marks';
import { authzenRoutes } from './http/authzen-routes';
import type { AppDeps, Deps } from './deps';

export type { Deps };

export interface VerifyApp extends AppLifecycle {
  /** Verify's routes other than POST /v1/verify. */
  app: Express;
}

/** Builds the app; nothing listens until start(). Closing deps is the wiring's job. */
export function createApp(given: Deps): VerifyApp {
  // One set of counters for every route.
  const deps: AppDeps = withRequestMarks({
    ...given,
    metrics: given.metrics ?? new VerifyMetrics(),
    mandatesTokens: given.mandatesTokens ?? new CachedTokenMinter(given.tokens),
  });
  const app = internalServiceApp('verify', {
    readiness: async () => ({ mandates: await deps.reader.check() }),
    tokens: deps.tokens,
    logger: deps.logger,
    handlers: [verifyRoutes(deps), authzenRoutes(deps)],
  });
  const listener = verifyRoute(deps, app);
  return { app, ...appLifecycle(listener) };
}
