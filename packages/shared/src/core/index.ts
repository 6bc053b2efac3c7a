/**
 * @mandate/shared/core (layer 1 of 8, docs/SERVICE-CONVENTIONS.md, "The shared package's layers").
 * The bottom layer: errors, ids, canonical JSON, time, configuration and the internal token.
 * Imports nothing of this package's other layers.
 */
export * from './errors';
export * from './ids';
export * from './canonical';
export * from './text';
export * from './time';
export * from './json-variable';
export * from './sorted-by-id';
export * from './redact-url';
export * from './amqp-url';
export * from './periodic';
export * from './liveness';
export * from './redis-keys';
export * from './config';
export * from './secrets';
export * from './internal-token';
export * from './infrastructure-errors';
