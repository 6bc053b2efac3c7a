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

/** Timestamps are served as ISO 8601 UTC with milliseconds, whatever precision the producer sent. */
function normalize(event: AuditEvent): AuditEvent {
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
