import {
  CachedTokenMinter,
  appLifecycle,
  internalServiceApp,
  type Clock,
  type EventPublisher,
  type InternalTokens,
  type Logger,
  type AppLifecycle,
} from '@mandate/shared';
import type { Express } from 'express';
import type { MandateReader } from './mandates/mandate-reader';
import { VerifyMetrics } from './metrics';
import { verifyRoutes } from './http/routes';
import { verifyHotPath } from './http/hot-path';

export interface Deps {
  reader: MandateReader;
  publisher: EventPublisher;
  tokens: InternalTokens;
  logger: Logger;
  clock: Clock;
  /** Hot-path counters, served at GET /internal/v1/metrics; absent → a fresh set. */
  metrics?: VerifyMetrics;
  /** Tokens for the mandates service on behalf of the caller; absent → minted with `tokens`. */
  mandatesTokens?: CachedTokenMinter;
}

export interface VerifyApp extends AppLifecycle {
  app: Express;
}

/** Builds the express app; nothing listens until start(). Closing deps is the wiring's job. */
export function createApp(given: Deps): VerifyApp {
  // One set of counters for the express routes and the hot path.
  const deps: Deps = {
    ...given,
    metrics: given.metrics ?? new VerifyMetrics(),
    mandatesTokens: given.mandatesTokens ?? new CachedTokenMinter(given.tokens),
  };
  const app = internalServiceApp('verify', {
    readiness: async () => ({ mandates: await deps.reader.check() }),
    tokens: deps.tokens,
    logger: deps.logger,
    handlers: [verifyRoutes(deps)],
  });
  // POST /v1/verify is answered without express; everything else (and anything unusual) goes to the app.
  const handler = verifyHotPath(deps, deps.metrics!, app);

  return { app, ...appLifecycle(handler) };
}
