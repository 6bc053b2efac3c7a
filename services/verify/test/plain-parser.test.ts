import fc from 'fast-check';
import { z } from 'zod';
import { plainObjectParser } from '../src/http/plain-parser';

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
  it('when given any object, valid or not, then it answers what zod answers or steps aside, never accepting more, and takes the fast way for most valid ones', () => {
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
    // Valid bodies built from the schema's shape (each optional field present or not, its value
    // within every rule, edges included), so the fast way is taken and compared with zod often.
    const valid = fc.record(
      {
        id: fc.oneof(
          fc.string({ minLength: 2, maxLength: 8 }),
          fc.string({ unit: 'grapheme', minLength: 1, maxLength: 4 }),
        ),
        name: fc.string({ minLength: 1, maxLength: 5 }),
        code: fc.stringMatching(/^[A-Z]{3}$/),
        count: fc.integer({ min: 0, max: 10 }),
        ratio: fc.oneof(
          fc.double({ min: -1, max: 1, noNaN: true }).filter((r) => r > -1 && r < 1),
          fc.constantFrom(-0, 0, Number.MIN_VALUE, 1 - Number.EPSILON, -1 + Number.EPSILON),
        ),
        flag: fc.boolean(),
      },
      // As JSON.parse makes them (a null-prototype object is zod's to decide; the other arbitraries make those).
      { requiredKeys: ['id'], noNullPrototype: true },
    );
    // A valid body with one thing changed: a field dropped, set undefined or to any member, a key added.
    const mutated = fc
      .tuple(
        valid,
        fc.constantFrom('id', 'name', 'code', 'count', 'ratio', 'flag', 'other', '__proto__'),
        fc.oneof(fc.constant('drop' as const), member),
      )
      .map(([body, key, change]) => {
        const copy: Record<string, unknown> = { ...body };
        if (change === 'drop') delete copy[key];
        else
          Object.defineProperty(copy, key, {
            value: change,
            enumerable: true,
            writable: true,
            configurable: true,
          });
        return copy;
      });
    const body = fc.oneof(
      { weight: 2, arbitrary: valid },
      { weight: 2, arbitrary: mutated },
      {
        weight: 1,
        arbitrary: fc.record(
          { id: member, name: member, code: member, count: member, ratio: member, flag: member },
          { requiredKeys: [] },
        ),
      },
      {
        weight: 1,
        arbitrary: fc.dictionary(
          fc.constantFrom('id', 'name', 'code', 'count', 'ratio', 'flag', 'other'),
          member,
        ),
      },
      { weight: 1, arbitrary: fc.anything() },
    );
    const runs = 5000;
    let fastAnswers = 0;
    let zodAccepts = 0;
    fc.assert(
      fc.property(body, (input) => {
        const answer = fast(input);
        const zod = schema.safeParse(input);
        if (zod.success) zodAccepts++;
        if (answer === undefined) return;
        fastAnswers++;
        expect(zod.success).toBe(true);
        expect(JSON.stringify(answer)).toBe(JSON.stringify(zod.data));
        expect(answer).toStrictEqual(zod.data);
      }),
      { numRuns: runs },
    );
    const share = (n: number) => `${((100 * n) / runs).toFixed(1)} %`;
    console.log(
      `plainObjectParser property: ${runs} bodies, zod accepted ${share(zodAccepts)}, the fast way answered ${share(fastAnswers)} (compared with zod each time)`,
    );
    // The comparison above only means something if the fast way is taken: most valid bodies take it.
    expect(fastAnswers / runs).toBeGreaterThanOrEqual(0.3);
    expect(fastAnswers / zodAccepts).toBeGreaterThanOrEqual(0.9);
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

  it('when a string field has a refinement, then the fast way calls its predicate as zod does and steps aside when it refuses', () => {
    const refined = plainObjectParser(
      z.strictObject({
        a: z
          .string()
          .max(5)
          .refine((v) => !v.includes('!'), { error: 'no !' }),
      }),
    );
    expect(refined({ a: 'ok' })).toStrictEqual({ a: 'ok' });
    expect(refined({ a: 'no!' })).toBeUndefined();
    expect(refined({ a: 'toolong' })).toBeUndefined();
    // A superRefine reports through its context, not its answer: not mirrored.
    expect(() => plainObjectParser(z.strictObject({ a: z.string().superRefine(() => undefined) }))).toThrow(
      /a: the string check custom/,
    );
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
