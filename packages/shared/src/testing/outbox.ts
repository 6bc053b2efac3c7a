import type { EventPublisher } from '../events/bus/types';
import type { AuditEvent } from '../events/events';
import type { OutboxStore } from '../events/outbox/relay';

/** A one-map outbox like the services' memory stores. */
export class MapOutbox implements OutboxStore {
  readonly pending = new Map<string, AuditEvent>();
  add(events: AuditEvent[]) {
    for (const e of events) this.pending.set(e.id, e);
  }
  async pendingEvents(limit: number) {
    return [...this.pending.values()].slice(0, limit);
  }
  async markSent(ids: string[]) {
    for (const id of ids) this.pending.delete(id);
  }
}

/** A broker stand-in for the relay and the spool: records what it confirmed; refuses while `down`. */
export class FlakyPublisher implements EventPublisher {
  readonly kind = 'rabbitmq' as const;
  readonly confirmed: AuditEvent[] = [];
  constructor(public down = false) {}
  async publish(events: AuditEvent[]) {
    if (this.down) throw new Error('broker unreachable');
    this.confirmed.push(...events);
  }
  async close() {}
}
