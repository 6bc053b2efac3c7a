import crypto from 'node:crypto';

/**
 * RFC 8785 canonical JSON: the byte string that signatures, digests and decision ids are computed
 * over. The same algorithm and output as the `canonicalize` package (keys sorted by UTF-16 code
 * units, undefined and symbol members left out, in arrays null, `toJSON` honoured, NaN and
 * Infinity refused; packages/shared/test/canonical.test.ts compares the two on arbitrary values),
 * written for speed: a value JSON.stringify can write as RFC 8785 does (`nativeForm`) is written by
 * it; otherwise strings that need no escape and numbers skip JSON.stringify, small objects are
 * sorted by insertion.
 */
export function canonicalJson(value: unknown): string {
  const form = nativeForm(value);
  if (form !== NOT_NATIVE) return JSON.stringify(form);
  const out = serialize(value);
  if (out === undefined) throw new Error('value cannot be canonicalised');
  return out;
}

// A quote, backslash, control character or any surrogate (lone ones are escaped): JSON.stringify decides.
// eslint-disable-next-line no-control-regex -- control characters are exactly what must be escaped
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;
const quote = (s: string) => (NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`);

// undefined for what JSON has no text for (undefined, a function, a symbol): a member of that
// kind in an object or array reads "undefined", exactly as in `canonicalize`.
function serialize(value: unknown): string {
  if (typeof value === 'string') return quote(value);
  if (typeof value === 'number') {
    if (Number.isNaN(value)) throw new Error('NaN is not allowed');
    if (!Number.isFinite(value)) throw new Error('Infinity is not allowed');
    // ToString(number) is what JSON.stringify writes for a finite number (ES2015+, as RFC 8785 says).
    return '' + value;
  }
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const object = value as Record<string, unknown>;
  if (object.toJSON instanceof Function) return serialize((object.toJSON as () => unknown).call(object));
  if (Array.isArray(value)) {
    let out = '';
    for (let i = 0; i < value.length; i++) {
      if (!(i in value)) continue; // a hole is skipped, its comma kept, as Array.prototype.reduce does
      const item: unknown = value[i];
      out += (i === 0 ? '' : ',') + serialize(item === undefined || typeof item === 'symbol' ? null : item);
    }
    return `[${out}]`;
  }
  const keys = sortedKeys(object);
  let out = '';
  for (const key of keys) {
    const member = object[key];
    if (member === undefined || typeof member === 'symbol') continue;
    out += (out.length === 0 ? '' : ',') + quote(key) + ':' + serialize(member);
  }
  return `{${out}}`;
}

const NOT_NATIVE: unknown = Symbol('not native');

/**
 * The value, or a copy with every object's keys in sorted order, that JSON.stringify writes
 * exactly as RFC 8785 does; NOT_NATIVE when there is none. Audit canonicalises every event it logs
 * and exports (docs/PERFORMANCE.md, "Tamper-evident log benchmark (issue 42)"), and the native
 * writer is much faster than building the string member by member. The two agree on plain objects
 * (no toJSON) and dense plain arrays of strings, finite numbers, booleans and null: JSON.stringify
 * visits keys in Object.keys order, escapes strings as `quote` does (lone surrogates included,
 * well-formed JSON.stringify) and writes a finite number as ToString does. Everything else
 * (undefined or function members, holes, dates, NaN, class instances) is left to `serialize`, and
 * so are keys out of order that a copy cannot reorder: array-index keys (Object.keys lists them
 * first, numerically) and `__proto__` (assigning it sets the prototype).
 */
function nativeForm(value: unknown): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : NOT_NATIVE;
    case 'object':
      break;
    default:
      return NOT_NATIVE;
  }
  if (value === null) return value;
  const object = value as Record<string, unknown>;
  if (object.toJSON !== undefined) return NOT_NATIVE;
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype) return NOT_NATIVE;
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      if (!(i in value)) return NOT_NATIVE;
      const item: unknown = value[i];
      const form = nativeForm(item);
      if (form === NOT_NATIVE) return NOT_NATIVE;
      if (copy === undefined && form !== item) copy = value.slice(0, i);
      copy?.push(form);
    }
    return copy ?? value;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return NOT_NATIVE;
  const keys = Object.keys(object);
  let inOrder = true;
  // A member named __proto__ goes to `serialize`: copies are plain {} (a null-prototype copy is a
  // dictionary-mode object to V8 and made the whole canonical form about a quarter slower), and on {}
  // assigning __proto__ would set the prototype instead of adding a member.
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    if (key === '__proto__') return NOT_NATIVE;
    if (i > 0 && inOrder) inOrder = keys[i - 1]! < key;
  }
  if (!inOrder) {
    for (const key of keys) {
      const first = key.charCodeAt(0);
      if (first >= 48 && first <= 57) return NOT_NATIVE;
    }
    sortKeys(keys);
  }
  let copy: Record<string, unknown> | undefined = inOrder ? undefined : {};
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const member = object[key];
    const form = nativeForm(member);
    if (form === NOT_NATIVE) return NOT_NATIVE;
    if (copy === undefined && form !== member) {
      copy = {};
      for (let j = 0; j < i; j++) copy[keys[j]!] = object[keys[j]!];
    }
    if (copy !== undefined) copy[key] = form;
  }
  return copy ?? value;
}

/** Own enumerable keys in sort() order (UTF-16 code units). */
function sortedKeys(object: object): string[] {
  return sortKeys(Object.keys(object));
}

/** Sorts keys in place in sort() order (UTF-16 code units, RFC 8785's order); small arrays by insertion. */
export function sortKeys(keys: string[]): string[] {
  if (keys.length > 12) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!;
    let j = i - 1;
    while (j >= 0 && keys[j]! > key) {
      keys[j + 1] = keys[j]!;
      j--;
    }
    keys[j + 1] = key;
  }
  return keys;
}

// crypto.hash (node ≥ 20.12): one call, no Hash object per digest.
const oneShot = typeof crypto.hash === 'function' ? crypto.hash : undefined;

export function sha256Hex(input: string | Buffer): string {
  if (oneShot) return oneShot('sha256', input, 'hex');
  return crypto.createHash('sha256').update(input).digest('hex');
}
