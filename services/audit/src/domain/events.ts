import { AppError, foundOr, toPage, type AuditEvent, type Page } from '@mandate/shared';
import type { EventListQuery, EventStore } from '../store/event-store';

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

export async function listEvents(
  store: EventStore,
  tenantId: string,
  query: EventListQuery,
): Promise<Page<AuditEvent>> {
  const items = await store.list(tenantId, query);
  return toPage(items, query.limit, (e) => e.id);
}
