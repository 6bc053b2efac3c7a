import fc from 'fast-check';
import canonicalize from 'canonicalize';
import { canonicalJson } from '../src/core';

/** The reference: the `canonicalize` package canonicalJson replaced, with its refusal as a throw. */
function reference(value: unknown): { ok: string } | { throws: true } {
  try {
    const out = canonicalize(value);
    return out === undefined ? { throws: true } : { ok: out };
  } catch {
    return { throws: true };
  }
}
function ours(value: unknown): { ok: string } | { throws: true } {
  try {
    return { ok: canonicalJson(value) };
  } catch {
    return { throws: true };
  }
}

// Any UTF-16 code units, lone surrogates and control characters included.
const codeUnits = fc
  .array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 12 })
  .map((units) => String.fromCharCode(...units));
const anyString = fc.oneof(fc.string(), codeUnits, fc.string({ unit: 'binary' }));
const leaf = fc.oneof(
  anyString,
  fc.double(),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.constant(-0),
  fc.constant(Symbol('s')),
  fc.date({ noInvalidDate: true }),
);
const { value } = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, leaf, tie('array'), tie('object')),
  array: fc.oneof(fc.array(tie('value'), { maxLength: 6 }), fc.sparseArray(tie('value'), { maxLength: 6 })),
  object: fc.dictionary(anyString, tie('value'), { maxKeys: 16 }),
}));

describe('canonicalJson', () => {
  it('when given any value, then it answers (or refuses) exactly as the canonicalize package does', () => {
    fc.assert(
      fc.property(value, (v) => {
        expect(ours(v)).toEqual(reference(v));
      }),
      { numRuns: 3000 },
    );
  });

  it('when given JSON as parsed, then it answers what canonicalize answers', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(canonicalJson(v)).toBe(canonicalize(v));
      }),
      { numRuns: 2000 },
    );
  });

  it('when keys come already sorted or nearly (the native JSON.stringify path), then it answers what canonicalize answers', () => {
    // Objects built with their keys in sorted order, then perturbed: reordered, a digit or
    // __proto__ key added (a copy cannot reorder those), a leaf made undefined, a date, NaN or a hole.
    const sortedObject = (entries: [string, unknown][]) =>
      Object.fromEntries([...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    const { node } = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        leaf,
        fc.array(tie('node'), { maxLength: 5 }),
        fc
          .array(
            fc.tuple(fc.oneof(anyString, fc.constantFrom('10', '9', '__proto__', 'toJSON')), tie('node')),
            {
              maxLength: 8,
            },
          )
          .chain((entries) =>
            fc.oneof(
              fc.constant(sortedObject(entries)),
              fc.constant(Object.fromEntries(entries)),
              fc.constant(JSON.parse(JSON.stringify(sortedObject(entries))) as unknown),
            ),
          ),
      ),
    }));
    fc.assert(
      fc.property(node, (v) => {
        expect(ours(v)).toEqual(reference(v));
      }),
      { numRuns: 3000 },
    );
  });

  it('when an object holds keys a copy cannot reorder, or a member JSON.stringify writes differently, then it still matches', () => {
    /* eslint-disable no-sparse-arrays -- holes are one of the cases */
    const cases: unknown[] = [
      JSON.parse('{"b":1,"10":2,"9":3,"a":{"2":1,"10":2}}'),
      JSON.parse('{"b":1,"__proto__":{"z":1,"a":2},"a":3}'),
      // In sorted order, with an earlier member that must be copied: __proto__ lands in the copy.
      JSON.parse('{"9":{"b":1,"a":2},"__proto__":[1]}'),
      JSON.parse('{"a":{"b":1,"a":2},"__proto__":{"y":1}}'),
      { a: { c: 1, b: [1, , 3] } },
      { a: { b: () => 1 } },
      { a: [undefined, Symbol('s')], b: 1 },
      { a: { b: 1, c: new Date(0) } },
      { a: new String('x'), b: new Number(1) },
      { a: { b: NaN } },
      { a: { toJSON: () => ({ z: 1, y: 2 }) }, b: 1 },
      { z: [{ y: 1, x: 2 }], a: -0, m: 'lone \ud800', e: 1e21 },
      Object.assign(Object.create(null) as object, { b: { d: 1, c: 2 }, a: 1 }),
    ];
    /* eslint-enable no-sparse-arrays */
    for (const c of cases) expect(ours(c)).toEqual(reference(c));
  });

  it('when given the odd cases, then it matches them one by one', () => {
    /* eslint-disable no-sparse-arrays -- holes are one of the odd cases */
    const cases: unknown[] = [
      { b: 1, a: [1, , 3], c: undefined, d: () => 1, e: Symbol('x') },
      [, 1],
      [undefined, () => 1, Symbol('y')],
      { toJSON: () => ({ z: 1, a: 2 }) },
      { toJSON: 'not a function', a: 1 },
      new Date(0),
      Object.assign(Object.create(null), { b: 2, a: 1 }),
      { '\ud800': 1, '\u00e9': 2, e: 3, '\u0000': 4, '"': 5, 'e\u0301': 6 },
      Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${(i * 7919) % 40}`, i])),
      1e21,
      5e-324,
      -0,
      'lone \udc00 surrogate',
      NaN,
      Infinity,
      undefined,
    ];
    /* eslint-enable no-sparse-arrays */
    for (const c of cases) expect(ours(c)).toEqual(reference(c));
  });
});
