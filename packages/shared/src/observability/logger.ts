import pino, { type Logger } from 'pino';
import { currentTraceIds } from './tracing';

export type { Logger };

/** Where every logger created from now on writes, when not stdout (setLogDestination). */
let destination: NodeJS.WritableStream | undefined;

/**
 * Every logger created from now on writes through `stream` (the embedded launcher's readable lines
 * on a terminal, docs/CONFIGURATION.md, "The launchers"); undefined: JSON to stdout again.
 */
export function setLogDestination(stream: NodeJS.WritableStream | undefined): void {
  destination = stream;
}

/** One structured logger per service. Secrets never reach it: the redact list is the last line of defence. */
export function createLogger(service: string, level: string = process.env.LOG_LEVEL ?? 'info'): Logger {
  const options: pino.LoggerOptions = {
    name: service,
    level,
    // With tracing on, every line written inside a traced request or delivery names its trace and span.
    // A fresh object each time: pino merges the line's own fields into what the mixin returns.
    mixin: () => currentTraceIds() ?? {},
    redact: {
      paths: ['req.headers.authorization', 'req.headers["x-api-key"]', 'api_key', '*.api_key', 'secret'],
      censor: '[redacted]',
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
