import type { AuditEvent } from '@mandate/shared';
import type { EventListQuery, EventStore } from './event-store';

const NOT_PLAIN = Symbol('not plain');

/**
 * A deep copy of plain JSON-like data — plain objects (Object.prototype), dense arrays and
 * primitives, each object reached once — which is exactly what structuredClone answers for such
 * data, at a tenth of its cost; NOT_PLAIN for anything else (a Date, a Map, a class instance, a
 * null prototype, a sparse array, a shared or cyclic reference, an own `__proto__` key), which
 * then goes to structuredClone itself.
 */
function copyPlain(value: unknown, seen: object[]): unknown {
  if (typeof value !== 'object' || value === null) {
    return typeof value === 'function' || typeof value === 'symbol' ? NOT_PLAIN : value;
  }
  if (seen.includes(value)) return NOT_PLAIN;
  seen.push(value);
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype || Object.keys(value).length !== value.length)
      return NOT_PLAIN;
    const out: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) {
      const item = copyPlain(value[i], seen);
      if (item === NOT_PLAIN) return NOT_PLAIN;
      out[i] = item;
    }
    return out;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return NOT_PLAIN;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    if (key === '__proto__') return NOT_PLAIN;
    const item = copyPlain((value as Record<string, unknown>)[key], seen);
    if (item === NOT_PLAIN) return NOT_PLAIN;
    out[key] = item;
  }
  return out;
}

/** structuredClone, the cheap way for plain JSON-like events (what every event is). */
export function cloneEvent(event: AuditEvent): AuditEvent {
  const copy = copyPlain(event, []);
  return copy === NOT_PLAIN ? structuredClone(event) : (copy as AuditEvent);
}

/** The embedded mode's store: data lives as long as the process. */
export class MemoryEventStore implements EventStore {
  readonly kind = 'memory' as const;
  private readonly byId = new Map<string, AuditEvent>();

  async insert(event: AuditEvent): Promise<void> {
    // The first write wins, as with a unique _id: a redelivery never overwrites.
    if (!this.byId.has(event.id)) this.byId.set(event.id, cloneEvent(event));
  }

  async insertMany(events: AuditEvent[]): Promise<void> {
    for (const event of events) await this.insert(event);
  }

  async get(tenantId: string, id: string): Promise<AuditEvent | null> {
    const event = this.byId.get(id);
    return event && event.tenant_id === tenantId ? cloneEvent(event) : null;
  }

  async list(tenantId: string, q: EventListQuery): Promise<AuditEvent[]> {
    const since = q.since === undefined ? undefined : Date.parse(q.since);
    const until = q.until === undefined ? undefined : Date.parse(q.until);
    const types = q.types && q.types.length > 0 ? new Set<string>(q.types) : undefined;
    const matches: AuditEvent[] = [];
    for (const event of this.byId.values()) {
      if (event.tenant_id !== tenantId) continue;
      if (q.afterId !== undefined && !(event.id < q.afterId)) continue;
      if (types && !types.has(event.type)) continue;
      if (q.resource_id !== undefined && event.resource?.id !== q.resource_id) continue;
      if (q.key_id !== undefined && event.actor.key_id !== q.key_id) continue;
      const at = Date.parse(event.occurred_at);
      if (since !== undefined && at < since) continue;
      if (until !== undefined && at >= until) continue;
      matches.push(event);
    }
    matches.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    return matches.slice(0, q.limit + 1).map(cloneEvent);
  }

  async listByResource(tenantId: string, resourceId: string, limit: number): Promise<AuditEvent[]> {
    const matches = [...this.byId.values()].filter(
      (e) => e.tenant_id === tenantId && e.resource?.id === resourceId,
    );
    matches.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return matches.slice(0, limit + 1).map(cloneEvent);
  }

  // The evidence export's read, on top of listByResource: this store holds every event in memory
  // anyway, so it hands out one copy of the resource's events one by one.
  async *readByResource(tenantId: string, resourceId: string): AsyncIterable<AuditEvent> {
    yield* await this.listByResource(tenantId, resourceId, Number.MAX_SAFE_INTEGER - 1);
  }

  async ping(): Promise<void> {}
}
