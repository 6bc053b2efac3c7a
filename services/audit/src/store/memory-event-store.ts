import type { AuditEvent } from '@mandate/shared';
import type { EventListQuery, EventStore } from './event-store';

/** The embedded mode's store: data lives as long as the process. */
export class MemoryEventStore implements EventStore {
  readonly kind = 'memory' as const;
  private readonly byId = new Map<string, AuditEvent>();

  async insert(event: AuditEvent): Promise<void> {
    // The first write wins, as with a unique _id: a redelivery never overwrites.
    if (!this.byId.has(event.id)) this.byId.set(event.id, structuredClone(event));
  }

  async insertMany(events: AuditEvent[]): Promise<void> {
    for (const event of events) await this.insert(event);
  }

  async get(tenantId: string, id: string): Promise<AuditEvent | null> {
    const event = this.byId.get(id);
    return event && event.tenant_id === tenantId ? structuredClone(event) : null;
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
    return matches.slice(0, q.limit + 1).map((e) => structuredClone(e));
  }

  async listByResource(tenantId: string, resourceId: string, limit: number): Promise<AuditEvent[]> {
    const matches = [...this.byId.values()].filter(
      (e) => e.tenant_id === tenantId && e.resource?.id === resourceId,
    );
    matches.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return matches.slice(0, limit + 1).map((e) => structuredClone(e));
  }

  async ping(): Promise<void> {}
}
