/**
 * @mandate/shared/observability (layer 2 of 8, docs/SERVICE-CONVENTIONS.md, "The shared package's layers").
 * Logging, metrics, tracing and the benchmark's request marks. Imports only core.
 */
export * from './logger';
export * from './log-format';
export * from './metrics';
export * from './tracing';
export * from './request-timing';
