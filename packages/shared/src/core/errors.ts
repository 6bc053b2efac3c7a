import { z } from 'zod';

/** The closed set of error codes (docs/API.md, "Errors") and the one place that maps them to HTTP statuses. */
export const ERROR_STATUS = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  TOO_MANY_REQUESTS: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export const errorEnvelopeSchema = z.object({
  error: z.enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]),
  message: z.string(),
});
export type ErrorEnvelope = z.infer<typeof errorEnvelopeSchema>;

/** A failure that maps onto the public envelope. Domain errors extend it so the middleware can map them. */
export class AppError extends Error {
  readonly status: number;
  /** Extra response headers, e.g. Retry-After on 429. */
  readonly headers: Record<string, string>;
  constructor(
    readonly code: ErrorCode,
    message: string,
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = new.target.name;
    this.status = ERROR_STATUS[code];
    // Every 503 says when to come back (docs/API.md, "Errors"): a client that honours Retry-After
    // never has to guess, and one second is what a dependency's reconnect takes.
    this.headers =
      code === 'SERVICE_UNAVAILABLE' && !('Retry-After' in headers)
        ? { 'Retry-After': '1', ...headers }
        : headers;
  }

  toEnvelope(): ErrorEnvelope {
    return { error: this.code, message: this.message };
  }
}

export const badRequest = (message: string) => new AppError('BAD_REQUEST', message);
export const unauthorized = (message = 'Invalid or missing API key') => new AppError('UNAUTHORIZED', message);
export const notFound = (message = 'Resource not found') => new AppError('NOT_FOUND', message);
export const conflict = (message: string) => new AppError('CONFLICT', message);
export const serviceUnavailable = (message = 'Service temporarily unavailable') =>
  new AppError('SERVICE_UNAVAILABLE', message);

/**
 * The call's audit event could not be kept (the event spool is full while the broker is away):
 * refused before anything runs, with Retry-After, rather than answered 2xx with its event lost
 * (docs/DECISIONS.md, "Event spool full").
 */
export const eventsNotRecordable = (what: string) =>
  new AppError('SERVICE_UNAVAILABLE', `${what} cannot be recorded now (event spool full); retry later`, {
    'Retry-After': '5',
  });

/**
 * The record a read found, else `absent()` thrown: every get-by-id answers a missing record (and
 * another tenant's, which the tenant-scoped read does not find) the same way.
 */
export async function foundOr<T>(read: Promise<T | null>, absent: () => Error): Promise<T> {
  const found = await read;
  if (found === null) throw absent();
  return found;
}

/** Turns the first zod issue into a sentence that names the field: "principal is required". */
export function describeZodError(error: z.ZodError, root = 'body'): string {
  const issue = error.issues[0];
  if (!issue) return `${root} is invalid`;
  return describeIssue(issue, issue.path.length > 0 ? issue.path.map(String).join('.') : root, root);
}

function describeIssue(issue: z.core.$ZodIssue, field: string, root: string): string {
  switch (issue.code) {
    case 'invalid_key': {
      // Names the record, never the offending key itself: it is raw input (docs/API.md, "Hardening").
      const record = issue.path.slice(0, -1).map(String).join('.') || root;
      const inner = issue.issues[0];
      return inner
        ? describeIssue(inner as z.core.$ZodIssue, `${record} key`, root)
        : `${record} has an invalid key`;
    }
    case 'invalid_type':
      if (issue.input === undefined) return `${field} is required`;
      return `${field} must be ${article(issue.expected)}`;
    case 'unrecognized_keys':
      return `${issue.keys.map((k) => (issue.path.length ? `${field}.${k}` : k)).join(', ')} ${
        issue.keys.length === 1 ? 'is' : 'are'
      } not allowed`;
    case 'invalid_value':
      return `${field} must be one of: ${issue.values.map(String).join(', ')}`;
    case 'too_small':
      if (issue.origin === 'string')
        return issue.minimum === 1
          ? `${field} must not be empty`
          : `${field} must be at least ${issue.minimum} characters`;
      if (issue.origin === 'array') return `${field} must have at least ${issue.minimum} item(s)`;
      return `${field} must be at least ${issue.minimum}`;
    case 'too_big':
      if (issue.origin === 'string') return `${field} must be at most ${issue.maximum} characters`;
      if (issue.origin === 'array') return `${field} must have at most ${issue.maximum} item(s)`;
      return `${field} must be at most ${issue.maximum}`;
    default:
      return `${field}: ${issue.message}`;
  }
}

function article(expected: string): string {
  if (expected === 'int' || expected === 'integer') return 'an integer';
  if (/^[aeiou]/.test(expected)) return `an ${expected}`;
  return `a ${expected}`;
}

/** Parses with zod and throws a 400 AppError naming the field on failure. */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, root = 'body'): z.output<S> {
  // reportInput lets the message tell "is required" (input absent) from "must be a string".
  const result = schema.safeParse(input, { reportInput: true });
  if (!result.success) throw badRequest(describeZodError(result.error, root));
  return result.data;
}
