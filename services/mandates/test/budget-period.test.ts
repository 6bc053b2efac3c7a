import { computePeriodBounds, isKnownTimeZone, periodBounds, startOfLocalDay } from '../src/budget-period';

const at = (iso: string) => new Date(iso);
const bounds = (period: 'day' | 'week' | 'month' | 'total', tz: string, iso: string) => {
  const b = periodBounds(period, tz, at(iso));
  return { start: b.start?.toISOString() ?? null, end: b.end?.toISOString() ?? null };
};

describe('periodBounds (docs/API.md#budgets)', () => {
  describe('Europe/Berlin, spring forward (2026-03-29, 02:00 → 03:00)', () => {
    it('when a hold is at 23:59:59 local the evening before, then it is in the 28th; at 00:00:00, in the 29th (a 23-hour day)', () => {
      // 23:59:59 CET (UTC+1) on the 28th, then 00:00:00 CET on the 29th.
      expect(bounds('day', 'Europe/Berlin', '2026-03-28T22:59:59.000Z')).toEqual({
        start: '2026-03-27T23:00:00.000Z',
        end: '2026-03-28T23:00:00.000Z',
      });
      expect(bounds('day', 'Europe/Berlin', '2026-03-28T23:00:00.000Z')).toEqual({
        start: '2026-03-28T23:00:00.000Z',
        end: '2026-03-29T22:00:00.000Z',
      });
    });
    it('when the day after the change starts, then it starts at 00:00 CEST (UTC+2)', () => {
      expect(bounds('day', 'Europe/Berlin', '2026-03-29T21:59:59.000Z').end).toBe('2026-03-29T22:00:00.000Z');
      expect(bounds('day', 'Europe/Berlin', '2026-03-29T22:00:00.000Z').start).toBe(
        '2026-03-29T22:00:00.000Z',
      );
    });
    it('when the month ends two days after the change, then 23:59:59 on the 31st is March and 00:00:00 is April', () => {
      expect(bounds('month', 'Europe/Berlin', '2026-03-31T21:59:59.000Z')).toEqual({
        start: '2026-02-28T23:00:00.000Z',
        end: '2026-03-31T22:00:00.000Z',
      });
      expect(bounds('month', 'Europe/Berlin', '2026-03-31T22:00:00.000Z')).toEqual({
        start: '2026-03-31T22:00:00.000Z',
        end: '2026-04-30T22:00:00.000Z',
      });
    });
  });

  describe('Europe/Berlin, fall back (2026-10-25, 03:00 → 02:00) and the month end after it', () => {
    it('when the day of the change is asked, then it is 25 hours long', () => {
      expect(bounds('day', 'Europe/Berlin', '2026-10-25T12:00:00.000Z')).toEqual({
        start: '2026-10-24T22:00:00.000Z',
        end: '2026-10-25T23:00:00.000Z',
      });
    });
    it('when a hold is at 23:59:59 on 31 October and another at 00:00:00 on 1 November (CET), then they are in different months', () => {
      expect(bounds('month', 'Europe/Berlin', '2026-10-31T22:59:59.000Z')).toEqual({
        start: '2026-09-30T22:00:00.000Z',
        end: '2026-10-31T23:00:00.000Z',
      });
      expect(bounds('month', 'Europe/Berlin', '2026-10-31T23:00:00.000Z')).toEqual({
        start: '2026-10-31T23:00:00.000Z',
        end: '2026-11-30T23:00:00.000Z',
      });
      expect(bounds('day', 'Europe/Berlin', '2026-10-31T22:59:59.000Z').end).toBe('2026-10-31T23:00:00.000Z');
    });
  });

  it('when a week is asked, then it runs Monday 00:00 to the next Monday 00:00 local, across a change', () => {
    // Sunday 29 March 2026 23:59:59 CEST is still the week that began Monday 23 March (CET).
    expect(bounds('week', 'Europe/Berlin', '2026-03-29T21:59:59.000Z')).toEqual({
      start: '2026-03-22T23:00:00.000Z',
      end: '2026-03-29T22:00:00.000Z',
    });
    expect(bounds('week', 'Europe/Berlin', '2026-03-29T22:00:00.000Z').start).toBe(
      '2026-03-29T22:00:00.000Z',
    );
    // A year boundary inside the week (ISO week 1 of 2027 begins Monday 4 January).
    expect(bounds('week', 'UTC', '2027-01-01T10:00:00.000Z')).toEqual({
      start: '2026-12-28T00:00:00.000Z',
      end: '2027-01-04T00:00:00.000Z',
    });
  });

  it('when the budget is total, then there are no bounds', () => {
    expect(bounds('total', 'Europe/Berlin', '2026-03-29T12:00:00.000Z')).toEqual({ start: null, end: null });
  });

  it('when local midnight does not exist (set forward at midnight), then the day starts at the change', () => {
    // America/Santiago set its clocks from 00:00 to 01:00 on 7 September 2025 (UTC-4 → UTC-3).
    expect(startOfLocalDay('America/Santiago', 2025, 9, 7).toISOString()).toBe('2025-09-07T04:00:00.000Z');
    expect(bounds('day', 'America/Santiago', '2025-09-07T12:00:00.000Z')).toEqual({
      start: '2025-09-07T04:00:00.000Z',
      end: '2025-09-08T03:00:00.000Z',
    });
  });

  it('when clocks are set back at midnight, then the day after starts at its one local midnight', () => {
    // America/Santiago set its clocks from 00:00 back to 23:00 on 6 April 2025 (UTC-3 → UTC-4):
    // 23:00–23:59 on the 5th happens twice, 00:00 on the 6th once (04:00Z).
    expect(startOfLocalDay('America/Santiago', 2025, 4, 5).toISOString()).toBe('2025-04-05T03:00:00.000Z');
    expect(bounds('day', 'America/Santiago', '2025-04-06T12:00:00.000Z').start).toBe(
      '2025-04-06T04:00:00.000Z',
    );
  });

  it('when a zone name is unknown, then isKnownTimeZone says so', () => {
    expect(isKnownTimeZone('Europe/Berlin')).toBe(true);
    expect(isKnownTimeZone('UTC')).toBe(true);
    expect(isKnownTimeZone('Mars/Olympus')).toBe(false);
  });
});

describe('periodBounds reuses the last period of each zone', () => {
  it('when instants come in any order, near every boundary too, then each answer is the uncached one', () => {
    const zones = [
      'Europe/Berlin',
      'America/New_York',
      'Pacific/Auckland',
      'Australia/Lord_Howe',
      'Asia/Kolkata',
    ];
    let seed = 42;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const from = Date.parse('2026-01-01T00:00:00Z');
    const span = 400 * 86_400_000;
    let checked = 0;
    for (let i = 0; i < 600; i++) {
      const tz = zones[i % zones.length]!;
      const period = (['day', 'week', 'month'] as const)[i % 3]!;
      const t = from + Math.floor(random() * span);
      const fresh = computePeriodBounds(period, tz, new Date(t));
      // The instant itself, then each side of both bounds: the cache is filled by one and read by the next.
      for (const probe of [
        t,
        fresh.start.getTime() - 1,
        fresh.start.getTime(),
        fresh.end.getTime() - 1,
        fresh.end.getTime(),
      ]) {
        const expected = computePeriodBounds(period, tz, new Date(probe));
        expect({ tz, period, probe, ...periodBounds(period, tz, new Date(probe)) }).toEqual({
          tz,
          period,
          probe,
          ...expected,
        });
        checked++;
      }
    }
    expect(checked).toBe(3_000);
  });
});
