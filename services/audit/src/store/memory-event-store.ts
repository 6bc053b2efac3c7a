import { SortedById, newestFirstOf, takeMatching, type AuditEvent } from '@mandate/shared';
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

const idOf = (event: AuditEvent): string => event.id;

/** One tenant's events, sorted by id, and the same events by the values the list filters on. */
interface TenantEvents {
  all: SortedById<AuditEvent>;
  byType: Map<string, SortedById<AuditEvent>>;
  byResource: Map<string, SortedById<AuditEvent>>;
  byKey: Map<string, SortedById<AuditEvent>>;
}

function addTo(indexes: Map<string, SortedById<AuditEvent>>, value: string, event: AuditEvent): void {
  let index = indexes.get(value);
  if (!index) indexes.set(value, (index = new SortedById(idOf)));
  index.insert(event);
}

/**
 * The embedded mode's store: data lives as long as the process. Each tenant has its events sorted
 * by id plus one sorted index per type, resource id and key id, so a page costs O(log n + limit)
 * whatever the other tenants hold: a binary search for the cursor, then a walk of the narrowest
 * index the filters allow (for several types, a merge of their indexes) until limit+1 events
 * matched. The walk checks every filter, so a combination only one of whose filters is indexed —
 * since/until never are, types with resource_id, … — reads that index from the cursor down to
 * the last match: at worst the tenant's own events of that index, never another tenant's.
 * Memory: the events themselves (~1 KB each) plus four references per event in the indexes.
 */
export class MemoryEventStore implements EventStore {
  readonly kind = 'memory' as const;
  /** Every event once, platform events included: the idempotency key and get. */
  private readonly byId = new Map<string, AuditEvent>();
  private readonly tenants = new Map<string, TenantEvents>();
  /**
   * One copy of each value that repeats across events (tenant, type, actor type and key, resource
   * type): delivered events each bring their own strings, and these are a fifth of an event's size.
   */
  private readonly common = new Map<string, string>();
  /** How many stored events the last list or listByResource looked at (tests assert the bound). */
  scanned = 0;

  async insert(event: AuditEvent): Promise<void> {
    // The first write wins, as with a unique _id: a redelivery never overwrites.
    if (this.byId.has(event.id)) return;
    const stored = cloneEvent(event);
    this.shareCommonStrings(stored);
    this.byId.set(stored.id, stored);
    if (stored.tenant_id === null) return;
    let tenant = this.tenants.get(stored.tenant_id);
    if (!tenant) {
      tenant = { all: new SortedById(idOf), byType: new Map(), byResource: new Map(), byKey: new Map() };
      this.tenants.set(stored.tenant_id, tenant);
    }
    tenant.all.insert(stored);
    addTo(tenant.byType, stored.type, stored);
    if (stored.resource) addTo(tenant.byResource, stored.resource.id, stored);
    if (stored.actor.key_id !== undefined) addTo(tenant.byKey, stored.actor.key_id, stored);
  }

  private shareCommonStrings(event: AuditEvent): void {
    const one = (value: string): string => {
      const known = this.common.get(value);
      if (known !== undefined) return known;
      this.common.set(value, value);
      return value;
    };
    if (event.tenant_id !== null) event.tenant_id = one(event.tenant_id);
    event.type = one(event.type) as AuditEvent['type'];
    event.actor.type = one(event.actor.type) as AuditEvent['actor']['type'];
    if (event.actor.key_id !== undefined) event.actor.key_id = one(event.actor.key_id);
    if (event.resource) event.resource.type = one(event.resource.type);
  }

  async insertMany(events: AuditEvent[]): Promise<void> {
    for (const event of events) await this.insert(event);
  }

  async get(tenantId: string, id: string): Promise<AuditEvent | null> {
    const event = this.byId.get(id);
    return event && event.tenant_id === tenantId ? cloneEvent(event) : null;
  }

  async list(tenantId: string, q: EventListQuery): Promise<AuditEvent[]> {
    this.scanned = 0;
    const tenant = this.tenants.get(tenantId);
    if (!tenant) return [];
    // The narrowest index the filters allow: fewest events to walk in the worst case.
    const candidates: SortedById<AuditEvent>[][] = [[tenant.all]];
    if (q.types && q.types.length > 0) {
      const unique = [...new Set<string>(q.types)];
      candidates.push(unique.flatMap((t) => tenant.byType.get(t) ?? []));
    }
    if (q.resource_id !== undefined)
      candidates.push([tenant.byResource.get(q.resource_id)].flatMap((i) => i ?? []));
    if (q.key_id !== undefined) candidates.push([tenant.byKey.get(q.key_id)].flatMap((i) => i ?? []));
    const total = (indexes: SortedById<AuditEvent>[]) => indexes.reduce((n, i) => n + i.size, 0);
    const walk = candidates.reduce((best, c) => (total(c) < total(best) ? c : best));
    if (walk.length === 0) return [];

    const since = q.since === undefined ? undefined : Date.parse(q.since);
    const until = q.until === undefined ? undefined : Date.parse(q.until);
    const types = q.types && q.types.length > 0 ? new Set<string>(q.types) : undefined;
    const matches = (event: AuditEvent): boolean => {
      this.scanned++;
      if (types && !types.has(event.type)) return false;
      if (q.resource_id !== undefined && event.resource?.id !== q.resource_id) return false;
      if (q.key_id !== undefined && event.actor.key_id !== q.key_id) return false;
      if (since === undefined && until === undefined) return true;
      const at = Date.parse(event.occurred_at);
      return !((since !== undefined && at < since) || (until !== undefined && at >= until));
    };
    return takeMatching(newestFirstOf(walk, idOf, q.afterId), matches, q.limit + 1).map(cloneEvent);
  }

  async listByResource(tenantId: string, resourceId: string, limit: number): Promise<AuditEvent[]> {
    this.scanned = 0;
    const index = this.tenants.get(tenantId)?.byResource.get(resourceId);
    if (!index) return [];
    const counted = () => (this.scanned++, true);
    return takeMatching(index.oldestFirst(), counted, limit + 1).map(cloneEvent);
  }

  async ping(): Promise<void> {}
}
