import type { z } from 'zod';

/**
 * A validator for a hot path, derived from the zod schema it mirrors (so the schema stays the one
 * source of truth): for a strict object of plain fields — strings with min/max length, regex and
 * `.refine(predicate)` checks (the predicate is called as zod calls it), integers or numbers with bounds, booleans, any of them optional — it answers exactly the
 * object zod would (the schema's key order, only the keys given) for an input that plainly passes
 * every rule, and undefined for anything else, valid or not, which the caller hands to zod
 * (`parseOrThrow`) to answer and word the error. It accepts a subset of what zod accepts, never more.
 * A schema with anything else in it (an object-level refinement, another check, a non-strict
 * object, another type) throws here, when the service starts, rather than letting the two drift apart.
 */
export function plainObjectParser<S extends z.ZodObject>(
  schema: S,
): (input: unknown) => z.output<S> | undefined {
  const def = internals(schema);
  if (def.type !== 'object' || internals(def.catchall)?.type !== 'never' || checksOf(def).length > 0)
    throw new Error('plainObjectParser: a strict object without refinements only');
  const fields = Object.entries(def.shape as Record<string, unknown>).map(([key, field]) => {
    let d = internals(field);
    const optional = d.type === 'optional';
    if (optional) d = internals(d.innerType);
    return { key, optional, test: fieldTest(key, d) };
  });
  const known = new Set(fields.map((f) => f.key));

  return (input) => {
    if (typeof input !== 'object' || input === null || Object.getPrototypeOf(input) !== Object.prototype)
      return undefined;
    const o = input as Record<string, unknown>;
    // An unknown key, or a key present as undefined: zod's to decide.
    for (const key in o) if (!known.has(key) || o[key] === undefined) return undefined;
    const out: Record<string, unknown> = {};
    for (let i = 0; i < fields.length; i++) {
      const { key, optional, test } = fields[i]!;
      const value = o[key];
      if (value === undefined) {
        if (optional) continue;
        return undefined;
      }
      if (!test(value)) return undefined;
      out[key] = value;
    }
    return out as z.output<S>;
  };
}

interface Def {
  type: string;
  [name: string]: unknown;
}
const internals = (schema: unknown) => (schema as { _zod: { def: Def } } | undefined)?._zod.def as Def;
const checksOf = (d: Def) => ((d.checks as unknown[] | undefined) ?? []).map(internals);

function fieldTest(key: string, d: Def): (value: unknown) => boolean {
  const unsupported = (what: string) => new Error(`plainObjectParser: ${key}: ${what} is not mirrored`);
  if (d.type === 'boolean') {
    if (checksOf(d).length) throw unsupported('a boolean check');
    return (v) => typeof v === 'boolean';
  }
  if (d.type === 'string') return stringTest(d, unsupported);
  if (d.type === 'number') return numberTest(d, unsupported);
  throw unsupported(`the type ${d.type}`);
}

type Unsupported = (what: string) => Error;

function stringTest(d: Def, unsupported: Unsupported): (value: unknown) => boolean {
  let min = 0;
  let max = Infinity;
  const patterns: RegExp[] = [];
  const predicates: ((v: string) => unknown)[] = [];
  for (const c of checksOf(d)) {
    if (c.check === 'min_length') min = Math.max(min, c.minimum as number);
    else if (c.check === 'max_length') max = Math.min(max, c.maximum as number);
    else if (c.check === 'string_format' && c.format === 'regex') patterns.push(c.pattern as RegExp);
    // `.refine(fn)`: zod calls fn(value) and refuses a falsy answer; so does this (a promise is zod's to await).
    else if (c.check === 'custom' && typeof c.fn === 'function')
      predicates.push(c.fn as (v: string) => unknown);
    else throw unsupported(`the string check ${String(c.check)}/${String(c.format)}`);
  }
  // zod counts a minimum in code points (a surrogate pair is one): n ≥ 2·min UTF-16 units always
  // hold enough of them, fewer are counted. A maximum counted in UTF-16 units is stricter than
  // zod's count in code points: a subset.
  const length = (v: unknown): v is string =>
    typeof v === 'string' &&
    v.length <= max &&
    (v.length >= 2 * min || (v.length >= min && codePoints(v) >= min));
  if (patterns.length === 0 && predicates.length === 0) return length;
  return (v) =>
    length(v) &&
    patterns.every((p) => {
      p.lastIndex = 0; // as zod does, for a global or sticky pattern
      return p.test(v);
    }) &&
    predicates.every((fn) => {
      const passed = fn(v);
      return passed === true || (Boolean(passed) && !(passed instanceof Promise));
    });
}

function numberTest(d: Def, unsupported: Unsupported): (value: unknown) => boolean {
  let integer = false;
  if (d.check !== undefined || d.format !== undefined) {
    if (d.check !== 'number_format' || d.format !== 'safeint')
      throw unsupported(`the number format ${String(d.format)}`);
    integer = true;
  }
  let low = -Infinity;
  let lowInclusive = true;
  let high = Infinity;
  let highInclusive = true;
  for (const c of checksOf(d)) {
    if (c.check === 'number_format' && c.format === 'safeint') integer = true;
    else if (c.check === 'greater_than' && low === -Infinity)
      [low, lowInclusive] = [c.value as number, c.inclusive as boolean];
    else if (c.check === 'less_than' && high === Infinity)
      [high, highInclusive] = [c.value as number, c.inclusive as boolean];
    // A second bound of one side (or any other check) is not mirrored.
    else throw unsupported(`the number check ${String(c.check)}`);
  }
  return (v) =>
    typeof v === 'number' &&
    (integer ? Number.isSafeInteger(v) : Number.isFinite(v)) &&
    (lowInclusive ? v >= low : v > low) &&
    (highInclusive ? v <= high : v < high);
}

/** Code points, a surrogate pair counting one (and a lone surrogate one). */
function codePoints(s: string): number {
  let count = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    if ((s.charCodeAt(i) & 0xfc00) === 0xd800 && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      count--;
      i++;
    }
  }
  return count;
}
