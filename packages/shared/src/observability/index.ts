/**
 * @mandate/shared/observability (layer 2 of 8, docs/SERVICE-CONVENTIONS.md, "The shared package's layers").
 * Logging, metrics, tracing and the benchmark's request marks. Imports only core.
 */

export { readableLogLine, readableLogStream } from './log-format';
export { createLogger, type Logger, setLogDestination } from './logger';
export { processMetrics, serveMetrics, timeToHeaders } from './metrics';
export { markRequest, requestTimingInstalled } from './request-timing';
export { setRequestRoute, setSpanAttributes, traceRequest } from './tracing';
