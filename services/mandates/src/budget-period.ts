/**
 * The one place a budget's period is computed (docs/API.md#budgets): calendar day, ISO week
 * (Monday 00:00) and calendar month in the budget's IANA timezone, daylight saving included;
 * `total` never resets. Intl only (no tz database of our own): Node ships the zones.
 */

export const BUDGET_PERIODS = ['total', 'day', 'week', 'month'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

/** A period as instants: `start` inclusive, `end` exclusive; both null for `total`. */
export interface PeriodBounds {
  start: Date | null;
  end: Date | null;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** Whether Intl knows `timeZone` (an IANA name such as Europe/Berlin, or UTC). */
export function isKnownTimeZone(timeZone: string): boolean {
  try {
    formatterOf(timeZone);
    return true;
  } catch {
    return false;
  }
}

interface WallClock {
  year: number;
  /** 1–12 */
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

function wallClock(timeZone: string, t: number): WallClock {
  const out: Record<string, number> = {};
  for (const part of formatterOf(timeZone).formatToParts(new Date(t))) {
    if (part.type !== 'literal') out[part.type] = Number(part.value);
  }
  return out as unknown as WallClock;
}

/** The zone's offset from UTC at instant `t`, in ms (local wall time − UTC), to the second. */
function offsetAt(timeZone: string, t: number): number {
  const w = wallClock(timeZone, t);
  const asUtc = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  return asUtc - Math.floor(t / 1000) * 1000;
}

const HOUR = 3_600_000;

/**
 * The first instant of local date (year, month, day) in `timeZone`. Local midnight may occur twice
 * (clocks set back at midnight: the earlier one starts the day) or never (set forward at
 * midnight: the day starts at the change, e.g. 01:00).
 */
export function startOfLocalDay(timeZone: string, year: number, month: number, day: number): Date {
  const wall = Date.UTC(year, month - 1, day);
  // Offsets in force around that wall time: any change near it is one of these.
  const offsets = new Set([-36, 0, 36].map((h) => offsetAt(timeZone, wall + h * HOUR)));
  const candidates = [...offsets].map((o) => wall - o);
  const valid = candidates.filter((t) => offsetAt(timeZone, t) === wall - t);
  // No valid candidate: midnight fell in a gap; the day starts at the change, the latest candidate.
  return new Date(valid.length > 0 ? Math.min(...valid) : Math.max(...candidates));
}

/** The local calendar date `days` after (year, month, day), as plain calendar arithmetic. */
function addDays(year: number, month: number, day: number, days: number): [number, number, number] {
  const d = new Date(Date.UTC(year, month - 1, day + days));
  return [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate()];
}

/**
 * The last period computed per (period, zone). A period's bounds hold for every instant in it, so
 * a hold or a budget read reuses them until the period ends: computing them costs about a dozen
 * Intl.formatToParts calls, most of a hold's CPU before this cache. At most 4 × the zones in use.
 */
const lastPeriods = new Map<string, { start: number; end: number }>();

/**
 * The period that holds instant `now` for a budget of `period` in `timeZone`. `total` has no
 * bounds (callers date it from the mandate's creation).
 */
export function periodBounds(period: BudgetPeriod, timeZone: string, now: Date): PeriodBounds {
  if (period === 'total') return { start: null, end: null };
  const key = `${period} ${timeZone}`;
  const t = now.getTime();
  let last = lastPeriods.get(key);
  if (!last || t < last.start || t >= last.end) {
    const computed = computePeriodBounds(period, timeZone, now);
    last = { start: computed.start.getTime(), end: computed.end.getTime() };
    lastPeriods.set(key, last);
  }
  return { start: new Date(last.start), end: new Date(last.end) };
}

/** periodBounds without the cache (exported for the test that the cache never differs from it). */
export function computePeriodBounds(
  period: Exclude<BudgetPeriod, 'total'>,
  timeZone: string,
  now: Date,
): { start: Date; end: Date } {
  const local = wallClock(timeZone, now.getTime());
  let first: [number, number, number];
  let next: [number, number, number];
  switch (period) {
    case 'day':
      first = [local.year, local.month, local.day];
      next = addDays(...first, 1);
      break;
    case 'week': {
      // ISO week: Monday first. getUTCDay of the local date: 0 Sunday … 6 Saturday.
      const weekday = new Date(Date.UTC(local.year, local.month - 1, local.day)).getUTCDay();
      first = addDays(local.year, local.month, local.day, -((weekday + 6) % 7));
      next = addDays(...first, 7);
      break;
    }
    case 'month':
      first = [local.year, local.month, 1];
      next = local.month === 12 ? [local.year + 1, 1, 1] : [local.year, local.month + 1, 1];
      break;
  }
  return { start: startOfLocalDay(timeZone, ...first), end: startOfLocalDay(timeZone, ...next) };
}
