import type { InternalTokens } from '@mandate/shared/core';
import type { Logger } from '@mandate/shared/observability';
import type { EventPublisher } from '@mandate/shared/events';
import type { ReadinessCheck, ServiceClient } from '@mandate/shared/http';
import type { JwtAuthenticator } from './auth/authenticate';
import type { KeyResolver } from './auth/key-resolver';
import type { UsableKeys } from './auth/usable-keys';
import type { DevSignIn } from './dashboard/dev-sign-in';
import type { DashboardOidc } from './dashboard/static';
import type { Idempotency } from './idempotency';
import type { RequestLimiter } from './limits';
import type { RouteRule, ServiceName } from './routes/table';

export type Upstreams = Record<Exclude<ServiceName, 'gateway'>, ServiceClient>;

/** What the gateway runs on; wire() builds it, createApp() serves it (the pipeline takes it from here, never from app.ts). */
export interface GatewayDeps {
  tokens: InternalTokens;
  logger: Logger;
  publisher: EventPublisher;
  upstreams: Upstreams;
  keys: KeyResolver;
  /** Every usable key by its hash prefix: a blocked address's valid keys pass by it (docs/DECISIONS.md, "Authentication"); absent = lookups only. */
  usableKeys?: UsableKeys;
  operatorToken: string;
  jwt?: JwtAuthenticator;
  /** The OpenAPI document, built once from the services' zod schemas. */
  openApiDocument: () => unknown;
  readiness?: ReadinessCheck;
  routes?: RouteRule[];
  /** Rate limits and quotas (docs/API.md, "Rate limits and quotas"); absent = unlimited (unit tests that are not about limits). */
  limiter?: RequestLimiter;
  /** Whether X-Forwarded-For names the client (a proxy of ours in front), for per-IP limits. */
  trustProxy?: boolean;
  /** Idempotency-Key on POSTs (docs/API.md, "Idempotency"); absent = keys are ignored (unit tests that are not about it). */
  idempotency?: Idempotency;
  /** One `info` line per request (ACCESS_LOG); absent = none. */
  accessLog?: boolean;
  /** The dashboard's static build (served at /dashboard/) and, in embedded mode, its development sign-in. */
  dashboard?: { dir: string; devSignIn?: DevSignIn; oidc?: DashboardOidc; walletSignIn?: boolean };
}
