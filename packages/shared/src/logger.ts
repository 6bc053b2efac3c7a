import pino, { type Logger } from 'pino';
import { currentTraceIds } from './tracing';

export type { Logger };

/** One structured logger per service. Secrets never reach it: the redact list is the last line of defence. */
export function createLogger(service: string, level: string = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    name: service,
    level,
    // With tracing on, every line written inside a traced request or delivery names its trace and span.
    // A fresh object each time: pino merges the line's own fields into what the mixin returns.
    mixin: () => currentTraceIds() ?? {},
    redact: {
      paths: ['req.headers.authorization', 'req.headers["x-api-key"]', 'api_key', '*.api_key', 'secret'],
      censor: '[redacted]',
    },
  });
}
