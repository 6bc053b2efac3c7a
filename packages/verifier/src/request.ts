/**
 * The rules of a verify request's members (docs/API.md#verify-input-rules): one dependency-free
 * module, read by verify's contract (its zod schema is built from these limits, patterns and
 * predicates) and by the offline verifier (`checkRequest`), so that what POST /v1/verify answers
 * 400 the verifier refuses, naming the same member. Reached through `@mandate/verifier/decide`.
 */

/** Length bounds in code points (a surrogate pair counts one, as zod counts), per member. */
export const REQUEST_LIMITS = {
  mandate_id: { min: 1, max: 256 },
  action: { min: 1, max: 200 },
  resource: { min: 0, max: 1024 },
  delegate_id: { min: 0, max: 256 },
} as const;

export const CURRENCY_PATTERN = /^[A-Z]{3}$/;
export const CURRENCY_MESSAGE = 'must be a 3-letter uppercase ISO 4217 code';

/**
 * What `action` and `resource` may not hold (docs/API.md#verify-input-rules): control characters
 * (Cc: C0 and C1), format characters (Cf: zero-width characters and every bidi override and
 * isolate, U+202A–U+202E, U+2066–U+2069), lone surrogates (Cs), private use (Co) and the line and
 * paragraph separators (Zl, Zp). They are stored in events and evidence, where they would render
 * as nothing or reorder what follows.
 */
const NOT_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Zl}\p{Zp}]/u;

export const PRINTABLE_MESSAGE =
  'must contain printable characters only (no control, format or bidi characters)';

export function isPrintable(value: string): boolean {
  return !NOT_PRINTABLE.test(value);
}

/**
 * No `.` or `..` path segment (between `/` or `\` or the ends) and no percent-encoded separator or
 * dot (`%2F`, `%5C`, `%2E`, any case): patterns match by prefix, so `acct:123/../999` would match
 * `acct:123/*` while a relying party that resolves it acts on `acct:999`.
 */
export const RESOURCE_PATH = /^(?![\s\S]*(?:(?:^|[/\\])\.\.?(?:[/\\]|$)|%(?:2[EeFf]|5[Cc])))/;

export const RESOURCE_PATH_MESSAGE =
  'must not contain "." or ".." path segments or percent-encoded separators (%2F, %5C, %2E), in any Unicode spelling';

const NOT_ASCII = /[^\x20-\x7e]/;

/**
 * The path rule on the resource as written and on its NFKC form, so that look-alikes which
 * compatibility-normalise to a dot, a separator or a percent sign (U+FF0E `．`, U+2024 `․`,
 * U+2025 `‥`, U+FE52, U+FF0F `／`, U+FF05 `％`, …) make no dot segment either.
 */
export function isSafeResourcePath(resource: string): boolean {
  if (!RESOURCE_PATH.test(resource)) return false;
  return !NOT_ASCII.test(resource) || RESOURCE_PATH.test(resource.normalize('NFKC'));
}

/** Why a verify request was refused: the member, and the message the online 400 gives it. */
export class RequestInvalid extends Error {
  constructor(
    readonly field: string,
    readonly detail: string,
  ) {
    super(`${field}: ${detail}`);
    this.name = 'RequestInvalid';
  }
}

const MEMBERS = new Set([
  'mandate_id',
  'action',
  'resource',
  'amount',
  'currency',
  'delegate_id',
  'min_assurance',
]);

/**
 * The verify request checked by the rules above (and `min_assurance` against `levels`), throwing
 * RequestInvalid on the first member that breaks one, in the members' order (the order of verify's
 * contract, so both name the same member), an unknown member last. `mandate_id` is
 * checked when present and required only when `withMandateId` (the offline request names its
 * mandate by its JWS instead).
 */
export function checkRequest(input: unknown, levels: readonly string[], withMandateId = false): void {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw new RequestInvalid('request', 'must be an object');
  const o = input as Record<string, unknown>;
  const text = (key: keyof typeof REQUEST_LIMITS, required: boolean): string | undefined => {
    const value = o[key];
    if (value === undefined) {
      if (required) throw new RequestInvalid(key, 'is required');
      return undefined;
    }
    if (typeof value !== 'string') throw new RequestInvalid(key, 'must be a string');
    const { min, max } = REQUEST_LIMITS[key];
    const length = codePoints(value);
    if (length < min) throw new RequestInvalid(key, `must be at least ${min} character long`);
    if (length > max) throw new RequestInvalid(key, `must be at most ${max} characters long`);
    return value;
  };
  if (withMandateId || o.mandate_id !== undefined) text('mandate_id', withMandateId);
  const action = text('action', true)!;
  if (!isPrintable(action)) throw new RequestInvalid('action', PRINTABLE_MESSAGE);
  const resource = text('resource', false);
  if (resource !== undefined) {
    if (!isPrintable(resource)) throw new RequestInvalid('resource', PRINTABLE_MESSAGE);
    if (!isSafeResourcePath(resource)) throw new RequestInvalid('resource', RESOURCE_PATH_MESSAGE);
  }
  if (o.amount !== undefined && (!Number.isSafeInteger(o.amount) || (o.amount as number) < 0))
    throw new RequestInvalid('amount', 'must be an integer of at least 0');
  if (o.currency !== undefined && (typeof o.currency !== 'string' || !CURRENCY_PATTERN.test(o.currency)))
    throw new RequestInvalid('currency', CURRENCY_MESSAGE);
  text('delegate_id', false);
  if (o.min_assurance !== undefined && !levels.includes(o.min_assurance as string))
    throw new RequestInvalid(
      'min_assurance',
      `must be ${levels.slice(0, -1).join(', ')} or ${levels.at(-1)}`,
    );
  // Last, as zod reports them: after every known member's own rules.
  for (const key of Object.keys(o)) {
    if (!MEMBERS.has(key)) throw new RequestInvalid(key, 'is not allowed');
  }
}

/** Code points, a surrogate pair counting one (as zod counts lengths). */
function codePoints(s: string): number {
  return [...s].length;
}
