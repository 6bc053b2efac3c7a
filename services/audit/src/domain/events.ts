import { AppError, badRequest, foundOr } from '@mandate/shared/core';
import { type AuditEvent } from '@mandate/shared/events';
import { toPage, type Page } from '@mandate/shared/contract';
import {
  DEFAULT_STATS_BUCKETS,
  MAX_STATS_BUCKETS,
  type VerificationStats,
  type VerificationStatsQuery,
} from '../contract';
import { bucketKey, type EventListQuery, type EventStore } from '../store/event-store';

export class EventNotFound extends AppError {
  constructor() {
    super('NOT_FOUND', 'Event not found');
  }
}

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
/** Where `YYYY-MM-DDTHH:mm:ss.sssZ` has its separators, and which (char codes). */
const SEPARATOR_AT = [4, 7, 10, 13, 16, 19, 23];
const SEPARATOR_IS = [...'--T::.Z'].map((c) => c.charCodeAt(0));

/** The number written by `text` from `at` to `at + length`, or NaN unless every character is a digit. */
function digits(text: string, at: number, length: number): number {
  let n = 0;
  for (let i = at; i < at + length; i++) {
    const d = text.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return NaN;
    n = n * 10 + d;
  }
  return n;
}

/**
 * Whether `text` is already an instant as audit serves it, `YYYY-MM-DDTHH:mm:ss.sssZ` naming a
 * real calendar date and time: exactly what `new Date(text).toISOString()` would give back. Every
 * producer writes that form, so the check spares each event a Date and a copy (ingest's cost per
 * event, docs/PERFORMANCE.md, "Tamper-evident log benchmark (issue 42)").
 */
export function isServedInstant(text: string): boolean {
  if (text.length !== 24) return false;
  for (let i = 0; i < SEPARATOR_AT.length; i++)
    if (text.charCodeAt(SEPARATOR_AT[i]!) !== SEPARATOR_IS[i]) return false;
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const monthDays = month === 2 && !leap ? 28 : DAYS_IN_MONTH[month - 1];
  return (
    year >= 0 &&
    monthDays !== undefined &&
    day >= 1 &&
    day <= monthDays &&
    digits(text, 11, 2) <= 23 &&
    digits(text, 14, 2) <= 59 &&
    digits(text, 17, 2) <= 59 &&
    digits(text, 20, 3) >= 0
  );
}

/** Timestamps are served as ISO 8601 UTC with milliseconds, whatever precision the producer sent. */
function normalize(event: AuditEvent): AuditEvent {
  if (isServedInstant(event.occurred_at)) return event;
  return { ...event, occurred_at: new Date(event.occurred_at).toISOString() };
}

/** Records a consumed event. Redeliveries of the same id are absorbed by the store. */
export async function recordEvent(store: EventStore, event: AuditEvent): Promise<void> {
  await store.insert(normalize(event));
}

export async function recordEvents(store: EventStore, events: AuditEvent[]): Promise<void> {
  await store.insertMany(events.map(normalize));
}

/** Another tenant's event and a platform event answer the same as an absent one. */
export function getEvent(store: EventStore, tenantId: string, id: string): Promise<AuditEvent> {
  return foundOr(store.get(tenantId, id), () => new EventNotFound());
}

/** One page in the asked order; with `withTotal`, how many events the filters select (include_total). */
export async function listEvents(
  store: EventStore,
  tenantId: string,
  { withTotal, ...query }: EventListQuery & { withTotal?: boolean },
): Promise<Page<AuditEvent>> {
  const [items, total] = await Promise.all([
    store.list(tenantId, query),
    withTotal ? store.count(tenantId, query) : undefined,
  ]);
  const page = toPage(items, query.limit, (e) => e.id, query.order);
  return total === undefined ? page : { ...page, total };
}

const BUCKET_MS = { hour: 3_600_000, day: 86_400_000 } as const;

/**
 * ALLOW and DENY per UTC hour or day of [since, until): every bucket of the window, counted by the
 * store. `since` is rounded down to its bucket (default: 24 hours or 14 days before the end of the
 * bucket `until` falls in); `until` (default now) ends the last bucket, maybe partway.
 */
export async function verificationStats(
  store: EventStore,
  tenantId: string,
  q: VerificationStatsQuery,
  now: Date,
): Promise<VerificationStats> {
  const size = BUCKET_MS[q.bucket];
  const until = q.until === undefined ? now.getTime() : Date.parse(q.until);
  const asked =
    q.since === undefined
      ? (Math.ceil(until / size) - DEFAULT_STATS_BUCKETS[q.bucket]) * size
      : Date.parse(q.since);
  if (until <= asked) throw badRequest('until must be after since');
  const since = Math.floor(asked / size) * size;
  const count = Math.ceil((until - since) / size);
  if (count > MAX_STATS_BUCKETS[q.bucket])
    throw badRequest(
      `the window holds ${count} ${q.bucket} buckets; at most ${MAX_STATS_BUCKETS[q.bucket]} are answered`,
    );
  const sinceIso = new Date(since).toISOString();
  const untilIso = new Date(until).toISOString();
  const rows = await store.countVerifications(tenantId, {
    since: sinceIso,
    until: untilIso,
    bucket: q.bucket,
  });
  const buckets = Array.from({ length: count }, (_, i) => ({
    start: new Date(since + i * size).toISOString(),
    allow: 0,
    deny: 0,
  }));
  const index = new Map(buckets.map((b) => [bucketKey(new Date(b.start), q.bucket), b]));
  for (const row of rows) {
    const b = index.get(row.bucket);
    if (!b) continue;
    if (row.decision === 'ALLOW') b.allow += row.count;
    else if (row.decision === 'DENY') b.deny += row.count;
  }
  return { bucket: q.bucket, since: sinceIso, until: untilIso, buckets };
}
