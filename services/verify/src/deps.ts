import type { CachedTokenMinter, Clock, InternalTokens } from '@mandate/shared/core';
import type { Logger } from '@mandate/shared/observability';
import type { EventPublisher } from '@mandate/shared/events';
import type { MandateReader } from './mandates/mandate-reader';
import type { VerifyMetrics } from './metrics';

/** What verify runs on; wire() builds it, createApp() serves it (src/http takes it from here, never from app.ts). */
export interface Deps {
  reader: MandateReader;
  publisher: EventPublisher;
  tokens: InternalTokens;
  logger: Logger;
  clock: Clock;
  /** Hot-path counters, served at GET /internal/v1/metrics; absent → a fresh set. */
  metrics?: VerifyMetrics;
  /** Where clients reach the gateway (PUBLIC_BASE_URL), for the AuthZEN metadata; absent → the default. */
  publicBaseUrl?: string;
  /** Tokens for the mandates service on behalf of the caller; absent → minted with `tokens`. */
  mandatesTokens?: CachedTokenMinter;
}

/** Deps as createApp fills them in: what the routes run on, every default given. */
export type AppDeps = Deps & Required<Pick<Deps, 'metrics' | 'mandatesTokens'>>;
