/**
 * @mandate/shared/core (layer 1 of 8, docs/SERVICE-CONVENTIONS.md, "The shared package's layers").
 * The bottom layer: errors, ids, canonical JSON, time, configuration and the internal token.
 * Imports nothing of this package's other layers.
 */

export { amqpNodes, describeAmqp } from './amqp-url';
export { canonicalJson, sha256Hex, sortKeys } from './canonical';
export { commonConfigShape, configError, ConfigError, env, parseConfig } from './config';
export {
  AppError,
  badRequest,
  conflict,
  describeZodError,
  errorEnvelopeSchema,
  eventsNotRecordable,
  foundOr,
  notFound,
  parseOrThrow,
  serviceUnavailable,
  unauthorized,
} from './errors';
export { newId } from './ids';
export {
  type Actor,
  actorSchema,
  CachedTokenMinter,
  type CallerContext,
  INTERNAL_SERVICES,
  INTERNAL_TOKEN_HEADER,
  internalTokens,
  type InternalTokens,
} from './internal-token';
export { boundedChecks, LivenessTracker } from './liveness';
export { PeriodicTask } from './periodic';
export { redactUrl } from './redact-url';
export { redisKeySpaces } from './redis-keys';
export { DOCUMENTED_SECRET_VALUES, secretProblem } from './secrets';
export { inOrderOf, plainId, SortedById, takeMatching, valueFor } from './sorted-by-id';
export { labelText } from './text';
export { type Clock, fixedClock, systemClock } from './time';
