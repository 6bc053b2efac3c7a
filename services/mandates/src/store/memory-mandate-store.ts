import { type SortedById, conflict, inOrderOf, plainId, takeMatching, valueFor } from '@mandate/shared/core';
import { MemoryOutbox, type AuditEvent } from '@mandate/shared/events';
import { FilterIndexes } from '@mandate/shared/data';
import {
  EXPIRABLE_STATES,
  effectiveState,
  isPastExpiry,
  searchNeedleOf,
  searchTextOf,
  type Mandate,
  type MandateState,
} from '../domain/mandate';
import type {
  CreateRequest,
  ListMandatesQuery,
  MandateFilters,
  MandateStore,
  TransitionPatch,
} from './mandate-store';
import { MemoryAuthorizations } from './memory-authorizations';
import {
  nextStatusList,
  slotAt,
  type PublishedStatusList,
  type StatusEntry,
  type StatusListRecord,
  type StatusSlot,
} from '../status-lists/status-list';

/** A tenant's mandate ids sorted, and by the values the list filters on (state as stored). */
type TenantIndexes = FilterIndexes<{ principal: string; delegate: string; state: MandateState }>;

/**
 * Embedded mode and tests: one map per tenant, and per tenant the ids sorted, by principal, by
 * delegate and by stored state, so a page costs O(log n + limit): a binary search for the cursor,
 * then a walk of the narrowest of those indexes until limit+1 mandates matched every filter. The
 * state filter reads the effective state at `now`, so `state=EXPIRED` walks the stored EXPIRED,
 * ACTIVE and SUSPENDED ids, and `state=ACTIVE` skips the ACTIVE ones already past expiry (those
 * the sweeper has not reached). Copies in and out so callers never share state with it.
 */
export class MemoryMandateStore implements MandateStore {
  readonly kind = 'memory' as const;
  private readonly tenants = new Map<string, Map<string, Mandate>>();
  private readonly indexes = new Map<string, TenantIndexes>();
  /** Unsent events by mandate (tenant + id), changed in the same synchronous step as the mandate. */
  private readonly outbox = new MemoryOutbox();
  readonly authorizations = new MemoryAuthorizations(this.outbox);
  /** Status lists by id, the newest (open) one last; and per list, its slots' mandates (tenant, id). */
  private readonly statusLists = new Map<string, StatusListRecord>();
  private readonly slots = new Map<string, Map<number, [string, string]>>();
  /** The mandate each request key (tenant + key) created: one per key, as the Mongo adapter's unique index. */
  private readonly byRequestKey = new Map<string, { id: string; digest: string }>();

  /** `statusListCapacity`: entries per list (100,000; tests close lists sooner). */
  constructor(private readonly options: { statusListCapacity?: number } = {}) {}

  private tenant(tenantId: string): Map<string, Mandate> {
    return valueFor(this.tenants, tenantId, () => new Map());
  }

  async create(
    tenantId: string,
    mandate: Mandate,
    outbox: AuditEvent[] = [],
    slot?: StatusSlot,
    request?: CreateRequest,
  ): Promise<Mandate> {
    const records = this.tenant(tenantId);
    // The same refusal as the Mongo adapter's unique index: a conflict (409), not a bare Error (500).
    if (records.has(mandate.id)) throw conflict('Mandate already exists');
    const byKey = request === undefined ? undefined : `${tenantId}\u0000${request.key}`;
    if (byKey !== undefined && this.byRequestKey.has(byKey)) throw conflict('Mandate already exists');
    if (slot) {
      const taken = valueFor(this.slots, slot.list_id, () => new Map());
      if (taken.has(slot.idx)) throw conflict('Status list slot already taken');
      taken.set(slot.idx, [tenantId, mandate.id]);
    }
    records.set(mandate.id, structuredClone({ ...mandate, tenant_id: tenantId }));
    if (byKey !== undefined) this.byRequestKey.set(byKey, { id: mandate.id, digest: request!.digest });
    this.index(tenantId, mandate);
    this.addToOutbox(tenantId, mandate.id, outbox);
    return structuredClone(records.get(mandate.id)!);
  }

  async findByRequestKey(
    tenantId: string,
    key: string,
  ): Promise<{ mandate: Mandate; digest: string | null } | null> {
    const found = this.byRequestKey.get(`${tenantId}\u0000${key}`);
    const mandate = found && (await this.get(tenantId, found.id));
    return mandate ? { mandate, digest: found.digest } : null;
  }

  async get(tenantId: string, id: string): Promise<Mandate | null> {
    const found = this.tenants.get(tenantId)?.get(id);
    return found ? structuredClone(found) : null;
  }

  private index(tenantId: string, mandate: Mandate): void {
    const tenant: TenantIndexes = valueFor(this.indexes, tenantId, () => new FilterIndexes());
    tenant.add(mandate.id, {
      principal: mandate.principal.id,
      delegate: mandate.delegate.id,
      state: mandate.state,
    });
  }

  async list(tenantId: string, query: ListMandatesQuery): Promise<Mandate[]> {
    const selected = this.select(tenantId, query);
    if (!selected) return [];
    const { records, walk, matches } = selected;
    return takeMatching(
      inOrderOf(walk, plainId, query.order ?? 'desc', query.afterId),
      matches,
      query.limit + 1,
    ).map((id) => structuredClone(records.get(id)!));
  }

  /** Every match of the walked index, O(its size): the same walk and test as `list`, so the two agree. */
  async count(tenantId: string, filters: MandateFilters): Promise<number> {
    const selected = this.select(tenantId, filters);
    if (!selected) return 0;
    let n = 0;
    for (const id of inOrderOf(selected.walk, plainId, 'desc')) if (selected.matches(id)) n++;
    return n;
  }

  /** The narrowest index the filters allow (fewest ids to walk in the worst case) and the test of an id. */
  private select(tenantId: string, filters: MandateFilters) {
    const records = this.tenants.get(tenantId);
    const tenant = this.indexes.get(tenantId);
    if (!records || !tenant) return undefined;
    const { state, principal_id, delegate_id, now } = filters;
    const needle = filters.q === undefined ? undefined : searchNeedleOf(filters.q);
    const candidates: SortedById<string>[][] = [[tenant.all]];
    if (principal_id !== undefined)
      candidates.push([tenant.under('principal', principal_id)].flatMap((i) => i ?? []));
    if (delegate_id !== undefined)
      candidates.push([tenant.under('delegate', delegate_id)].flatMap((i) => i ?? []));
    if (state !== undefined) {
      // Stored states partition the ids; an expirable mandate past expiry reads as EXPIRED.
      const stored = state === 'EXPIRED' ? ['EXPIRED' as const, ...EXPIRABLE_STATES] : [state];
      candidates.push(stored.flatMap((s) => tenant.under('state', s) ?? []));
    }
    const total = (indexes: SortedById<string>[]) => indexes.reduce((n, i) => n + i.size, 0);
    const walk = candidates.reduce((best, c) => (total(c) < total(best) ? c : best));
    const matches = (id: string): boolean => {
      const m = records.get(id)!;
      return (
        (state === undefined || effectiveState(m, now) === state) &&
        (principal_id === undefined || m.principal.id === principal_id) &&
        (delegate_id === undefined || m.delegate.id === delegate_id) &&
        // A substring test, never a pattern: `q` is literal (docs/API.md, "Mandates").
        (needle === undefined || searchTextOf(m).includes(needle))
      );
    };
    return { records, walk, matches };
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
    this.indexes.get(tenantId)!.move(id, 'state', current.state, updated.state);
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

  async allocateStatusSlot(): Promise<StatusSlot> {
    // One synchronous step: no two callers can read the same counter value.
    let open = [...this.statusLists.values()].at(-1);
    if (!open || open.next_idx >= open.capacity) {
      open = nextStatusList(open, this.options.statusListCapacity);
      this.statusLists.set(open.list_id, open);
    }
    return { list_id: open.list_id, idx: slotAt(open.slot_key, open.next_idx++, open.capacity) };
  }

  async getStatusList(listId: string): Promise<StatusListRecord | null> {
    const found = this.statusLists.get(listId);
    if (!found) return null;
    // The slot key stays in the store, as the MongoDB adapter's read leaves it out.
    const { slot_key: _key, ...list } = structuredClone(found);
    return list;
  }

  async statusEntries(listId: string): Promise<StatusEntry[]> {
    const entries: StatusEntry[] = [];
    for (const [idx, [tenantId, id]] of this.slots.get(listId) ?? []) {
      const m = this.tenants.get(tenantId)?.get(id);
      if (m) entries.push({ idx, state: m.state, expires_at: m.expires_at });
    }
    return entries;
  }

  async publishStatusList(
    listId: string,
    expectedEtag: string | null,
    published: PublishedStatusList,
    outbox: AuditEvent[] = [],
  ): Promise<boolean> {
    const list = this.statusLists.get(listId);
    if (!list || (list.published?.etag ?? null) !== expectedEtag) return false;
    list.published = structuredClone(published);
    this.outbox.add(`status-list\u0000${listId}`, outbox);
    return true;
  }

  async ping(): Promise<void> {}
}
