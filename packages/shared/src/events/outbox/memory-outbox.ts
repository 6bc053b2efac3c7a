import type { AuditEvent } from '../events';

/**
 * The in-memory stores' outbox: unsent events by the record that produced them, changed in the
 * same synchronous step as the record (the memory counterpart of events riding in a MongoDB
 * document). Callers get copies, never the stored events.
 */
export class MemoryOutbox {
  private readonly pending = new Map<string, AuditEvent[]>();

  add(record: string, events: AuditEvent[] | undefined): void {
    if (!events || events.length === 0) return;
    this.pending.set(record, [...(this.pending.get(record) ?? []), ...structuredClone(events)]);
  }

  /** Up to `limit` events, whole records at a time (at least one record, even if it holds more). */
  events(limit: number): AuditEvent[] {
    const events: AuditEvent[] = [];
    for (const pending of this.pending.values()) {
      if (events.length > 0 && events.length + pending.length > limit) break;
      events.push(...pending);
    }
    return structuredClone(events);
  }

  markSent(eventIds: string[]): void {
    const sent = new Set(eventIds);
    for (const [record, pending] of this.pending) {
      const left = pending.filter((e) => !sent.has(e.id));
      if (left.length === 0) this.pending.delete(record);
      else if (left.length !== pending.length) this.pending.set(record, left);
    }
  }
}
