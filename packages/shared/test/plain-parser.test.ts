import fc from 'fast-check';
import { z } from 'zod';
import { plainObjectParser } from '../src';

const schema = z.strictObject({
  id: z.string().min(2).max(8),
  name: z.string().min(1).max(5).optional(),
  code: z
    .string()
    .regex(/^[A-Z]{3}$/g)
    .optional(),
  count: z.int().min(0).max(10).optional(),
  ratio: z.number().gt(-1).lt(1).optional(),
  flag: z.boolean().optional(),
});
const fast = plainObjectParser(schema);

describe('plainObjectParser', () => {
  it('when given any object, then it answers what zod answers or steps aside, never accepting more', () => {
    const text = fc.oneof(
      fc.string({ maxLength: 10 }),
      fc.string({ unit: 'binary', maxLength: 10 }),
      fc.constantFrom('ABC', 'abc', '😀', '😀😀'),
    );
    const member = fc.oneof(
      text,
      fc.integer({ min: -3, max: 12 }),
      fc.double(),
      fc.boolean(),
      fc.constant(null),
      fc.constant(undefined),
    );
    const body = fc.oneof(
      fc.record(
        { id: member, name: member, code: member, count: member, ratio: member, flag: member },
        { requiredKeys: [] },
      ),
      fc.dictionary(fc.constantFrom('id', 'name', 'code', 'count', 'ratio', 'flag', 'other'), member),
      fc.anything(),
    );
    fc.assert(
      fc.property(body, (input) => {
        const answer = fast(input);
        if (answer === undefined) return;
        const zod = schema.safeParse(input);
        expect(zod.success).toBe(true);
        expect(JSON.stringify(answer)).toBe(JSON.stringify(zod.data));
        expect(answer).toStrictEqual(zod.data);
      }),
      { numRuns: 5000 },
    );
  });

  it('when a body plainly passes, then it takes the fast way', () => {
    expect(fast({ flag: true, count: 3, id: 'ab' })).toStrictEqual({ id: 'ab', count: 3, flag: true });
    expect(fast({ id: 'ab', code: 'EUR', ratio: 0.5 })).toStrictEqual({ id: 'ab', code: 'EUR', ratio: 0.5 });
  });

  it('when a minimum length is counted in code points, then a string of too few of them steps aside', () => {
    // One code point in two UTF-16 units: zod refuses it for min(2).
    expect(schema.safeParse({ id: '😀' }).success).toBe(false);
    expect(fast({ id: '😀' })).toBeUndefined();
  });

  it('when a schema holds what it does not mirror, then it refuses to build', () => {
    expect(() => plainObjectParser(z.object({ a: z.string() }))).toThrow(/strict object/);
    expect(() => plainObjectParser(z.strictObject({ a: z.string() }).refine(() => true) as never)).toThrow();
    expect(() => plainObjectParser(z.strictObject({ a: z.string().email() }))).toThrow(/a: the string check/);
    expect(() => plainObjectParser(z.strictObject({ a: z.enum(['x']) }))).toThrow(/the type enum/);
    expect(() => plainObjectParser(z.strictObject({ a: z.number().multipleOf(2) }))).toThrow(/number check/);
    expect(() => plainObjectParser(z.strictObject({ a: z.string().nullable() }))).toThrow(/nullable/);
  });
});
