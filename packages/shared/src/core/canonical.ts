import crypto from 'node:crypto';

/**
 * RFC 8785 canonical JSON: the byte string that signatures, digests and decision ids are computed
 * over. The same algorithm and output as the `canonicalize` package (keys sorted by UTF-16 code
 * units, undefined and symbol members left out, in arrays null, `toJSON` honoured, NaN and
 * Infinity refused; packages/shared/test/canonical.test.ts compares the two on arbitrary values),
 * written for speed on the verify path: strings that need no escape and numbers skip JSON.stringify,
 * small objects are sorted by insertion.
 */
export function canonicalJson(value: unknown): string {
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

/** Own enumerable keys in sort() order (UTF-16 code units). */
function sortedKeys(object: object): string[] {
  const keys = Object.keys(object);
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
