import { MemoryOutbox, conflict, type AuditEvent } from '@mandate/shared';
import { EXPIRABLE_STATES, effectiveState, isPastExpiry, type Mandate } from '../domain/mandate';
import type { ListMandatesQuery, MandateStore, TransitionPatch } from './mandate-store';

/** Embedded mode and tests: one map per tenant; copies in and out so callers never share state with it. */
export class MemoryMandateStore implements MandateStore {
  readonly kind = 'memory' as const;
  private readonly tenants = new Map<string, Map<string, Mandate>>();
  /** Unsent events by mandate (tenant + id), changed in the same synchronous step as the mandate. */
  private readonly outbox = new MemoryOutbox();

  private tenant(tenantId: string): Map<string, Mandate> {
    let records = this.tenants.get(tenantId);
    if (!records) {
      records = new Map();
      this.tenants.set(tenantId, records);
    }
    return records;
  }

  async create(tenantId: string, mandate: Mandate, outbox: AuditEvent[] = []): Promise<Mandate> {
    const records = this.tenant(tenantId);
    // The same refusal as the Mongo adapter's unique index: a conflict (409), not a bare Error (500).
    if (records.has(mandate.id)) throw conflict('Mandate already exists');
    records.set(mandate.id, structuredClone({ ...mandate, tenant_id: tenantId }));
    this.addToOutbox(tenantId, mandate.id, outbox);
    return structuredClone(records.get(mandate.id)!);
  }

  async get(tenantId: string, id: string): Promise<Mandate | null> {
    const found = this.tenants.get(tenantId)?.get(id);
    return found ? structuredClone(found) : null;
  }

  async list(tenantId: string, query: ListMandatesQuery): Promise<Mandate[]> {
    const records = this.tenants.get(tenantId);
    if (!records) return [];
    return [...records.values()]
      .filter((m) => query.afterId === undefined || m.id < query.afterId)
      .filter((m) => query.state === undefined || effectiveState(m, query.now) === query.state)
      .filter((m) => query.principal_id === undefined || m.principal.id === query.principal_id)
      .filter((m) => query.delegate_id === undefined || m.delegate.id === query.delegate_id)
      .sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
      .slice(0, query.limit + 1)
      .map((m) => structuredClone(m));
  }

  async transition(
    tenantId: string,
    id: string,
    expectedVersion: number,
    patch: TransitionPatch,
    outbox: AuditEvent[] = [],
  ): Promise<Mandate | null> {
    const records = this.tenants.get(tenantId);
    const current = records?.get(id);
    if (!records || !current || current.version !== expectedVersion) return null;
    const updated = { ...current, state: patch.state, version: patch.version, updated_at: patch.updated_at };
    records.set(id, updated);
    this.addToOutbox(tenantId, id, outbox);
    return structuredClone(updated);
  }

  async findDue(now: Date, limit: number): Promise<Mandate[]> {
    const due: Mandate[] = [];
    for (const records of this.tenants.values()) {
      for (const m of records.values()) {
        if (EXPIRABLE_STATES.includes(m.state) && isPastExpiry(m, now)) due.push(m);
      }
    }
    return due
      .sort((a, b) => Date.parse(a.expires_at!) - Date.parse(b.expires_at!))
      .slice(0, limit)
      .map((m) => structuredClone(m));
  }

  private addToOutbox(tenantId: string, id: string, events: AuditEvent[]): void {
    this.outbox.add(`${tenantId}\u0000${id}`, events);
  }

  async pendingEvents(limit: number): Promise<AuditEvent[]> {
    return this.outbox.events(limit);
  }

  async markSent(eventIds: string[]): Promise<void> {
    this.outbox.markSent(eventIds);
  }

  async ping(): Promise<void> {}
}
