/**
 * `@mandate/gateway/testing`: what the tests and benchmarks outside this service assemble a gateway
 * from in-process. Nothing else outside the gateway reaches into its src.
 */
export { createApp, type GatewayApp, type Upstreams } from '../src/app';
export { CachedKeyResolver, type KeyResolver } from '../src/auth/key-resolver';
export { CachedSubjectResolver } from '../src/auth/subject-resolver';
export { JoseJwtAuthenticator, parseJwtIssuers, type JwtIssuer } from '../src/auth/jwt';
export { credentialEventHandler } from '../src/auth/credential-events';
export { RouteMatcher } from '../src/routes/match';
export { CredentialEpochCheck } from '../src/auth/credential-epoch';
export { DEFAULT_IDEMPOTENCY_SETTINGS } from '../src/idempotency';
// The limiter and Idempotency-Key stores on Redis, and the limits suite, for the Redis Cluster test.
export { PlanLimiter, RedisLimiterBackend, resolveLimits } from '../src/limits';
export { RedisIdempotencyStore, type StoredResponse } from '../src/idempotency';
export { describeLimits } from './limits-suite';
