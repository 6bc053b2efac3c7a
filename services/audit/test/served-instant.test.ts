import fc from 'fast-check';
import { isServedInstant } from '../src/domain/events';

/** What the check stands for: the instant as `new Date(text).toISOString()` would write it. */
function roundTrips(text: string): boolean {
  const ms = Date.parse(text);
  return !Number.isNaN(ms) && new Date(ms).toISOString() === text;
}

const field = (digits: number, max: number) =>
  fc.integer({ min: 0, max }).map((n) => String(n).padStart(digits, '0'));

/** Near-instants: every field sometimes out of its range, sometimes a separator or digit off. */
const nearInstant = fc
  .tuple(
    field(4, 9999),
    field(2, 13),
    field(2, 32),
    field(2, 25),
    field(2, 61),
    field(2, 61),
    field(3, 999),
    fc.constantFrom('Z', 'Z', 'Z', 'z', '+'),
    fc.constantFrom('T', 'T', 'T', ' '),
  )
  .map(([y, mo, d, h, mi, s, ms, zone, t]) => `${y}-${mo}-${d}${t}${h}:${mi}:${s}.${ms}${zone}`);

describe('isServedInstant', () => {
  it('when given near-instants, then it holds exactly for those a Date writes back unchanged', () => {
    fc.assert(
      fc.property(nearInstant, (text) => expect(isServedInstant(text)).toBe(roundTrips(text))),
      { numRuns: 20_000 },
    );
  });

  it('when given the calendar edges, then it agrees with a Date', () => {
    for (const text of [
      '2024-02-29T00:00:00.000Z', // a leap year
      '2023-02-29T00:00:00.000Z',
      '2000-02-29T23:59:59.999Z', // divisible by 400
      '1900-02-29T00:00:00.000Z', // by 100, not 400
      '2026-04-31T00:00:00.000Z',
      '2026-12-31T23:59:59.999Z',
      '2026-01-01T24:00:00.000Z', // the end of a day, which a Date writes as the next one
      '0000-01-01T00:00:00.000Z',
      '2026-01-01T00:00:00Z', // no milliseconds
      '2026-01-01T00:00:00.0000Z',
      '+002026-01-01T00:00:00.000Z',
      '2026-01-01T00:00:00.000+00:00',
      '２０２６-01-01T00:00:00.000Z', // digits that are not ASCII
    ])
      expect([text, isServedInstant(text)]).toEqual([text, roundTrips(text)]);
  });
});
