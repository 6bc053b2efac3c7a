import pino, { type Logger } from 'pino';

export type { Logger };

/** One structured logger per service. Secrets never reach it: the redact list is the last line of defence. */
export function createLogger(service: string, level: string = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    name: service,
    level,
    redact: {
      paths: ['req.headers.authorization', 'req.headers["x-api-key"]', 'api_key', '*.api_key', 'secret'],
      censor: '[redacted]',
    },
  });
}
