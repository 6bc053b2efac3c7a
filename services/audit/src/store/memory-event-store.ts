import { SortedById, inOrderOf, sortKeys, takeMatching, valueFor } from '@mandate/shared/core';
import { MemoryMerkleTree, merkleHasher, type LeafRange } from '@mandate/shared/mandate';
import { type AuditEvent } from '@mandate/shared/events';
import {
  bucketKey,
  isDashboardRead,
  type DecisionCount,
  type EventFilters,
  type EventListQuery,
  type EventStore,
  type BackfillReport,
  type LogStore,
  type StatsBucket,
  type StoredCheckpoint,
} from './event-store';
import { auditLeafHash, leafInputOfJson } from './leaf-hash';

const NOT_PLAIN = Symbol('not plain');

/** How many events a set of indexes holds together. */
const total = (indexes: SortedById<AuditEvent>[]) => indexes.reduce((n, i) => n + i.size, 0);

/**
 * A deep copy of plain JSON data — plain objects (Object.prototype), dense arrays, strings, finite
 * numbers, booleans, null and undefined members, each object reached once — which is exactly what
 * structuredClone answers for such data, at a tenth of its cost, with every object's members in
 * sorted order; NOT_PLAIN for anything else (a Date, a Map, a class instance, a null prototype, a
 * sparse array, a shared or cyclic reference, NaN, a bigint, an own `__proto__` key or, sorting, a
 * key starting with a digit, which Object.keys could list out of sorted order), which then goes to
 * structuredClone itself. Sorted and plain, because then JSON.stringify of the copy is its RFC 8785
 * canonical JSON (what the log's leaves and the export's digests hash) with no sorted copy of its own.
 */
function copyPlain(value: unknown, seen: object[], sort: boolean): unknown {
  if (typeof value !== 'object' || value === null) {
    switch (typeof value) {
      case 'number':
        return Number.isFinite(value) ? value : NOT_PLAIN;
      case 'function':
      case 'symbol':
      case 'bigint':
        return NOT_PLAIN;
      default:
        return value;
    }
  }
  if (seen.includes(value)) return NOT_PLAIN;
  seen.push(value);
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype || Object.keys(value).length !== value.length)
      return NOT_PLAIN;
    const out: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) {
      const item = copyPlain(value[i], seen, sort);
      if (item === NOT_PLAIN) return NOT_PLAIN;
      out[i] = item;
    }
    return out;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return NOT_PLAIN;
  const keys = Object.keys(value);
  return copyMembers(value, sort ? sortKeys(keys) : keys, seen, sort);
}

/**
 * copyPlain's copy of an object's members, in the order of `keys` (members not listed are left
 * out); `seq`, when given, stands for the member of that name.
 */
function copyMembers(
  source: object,
  keys: readonly string[],
  seen: object[],
  sort: boolean,
  seq?: number,
): Record<string, unknown> | typeof NOT_PLAIN {
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    if (key === '__proto__' || (sort && isDigit(key.charCodeAt(0)))) return NOT_PLAIN;
    const item =
      key === 'seq' && seq !== undefined
        ? seq
        : copyPlain((source as Record<string, unknown>)[key], seen, sort);
    if (item === NOT_PLAIN) return NOT_PLAIN;
    out[key] = item;
  }
  return out;
}

const isDigit = (code: number) => code >= 48 && code <= 57;

/** structuredClone, the cheap way for plain JSON-like events (what every event is). */
export function cloneEvent(event: AuditEvent): AuditEvent {
  const copy = copyPlain(event, [], false);
  return copy === NOT_PLAIN ? structuredClone(event) : (copy as AuditEvent);
}

/**
 * The copy the store keeps: the event's members (sorted with `sort`, see copyPlain), with `seq` set
 * to the store's (or left out when undefined) in its place rather than appended last. `plain` says
 * the copy is copyPlain's: sorted as well, JSON.stringify(copy) is the event's canonical JSON.
 */
function storedCopy(
  event: AuditEvent,
  seq: number | undefined,
  sort: boolean,
): { copy: AuditEvent; plain: boolean } {
  const keys = Object.keys(event);
  const delivered = keys.indexOf('seq');
  if (seq === undefined && delivered >= 0) keys.splice(delivered, 1);
  if (seq !== undefined && delivered < 0) keys.push('seq');
  if (sort) sortKeys(keys);
  const copy = copyMembers(event, keys, [event], sort, seq);
  if (copy !== NOT_PLAIN) return { copy: copy as unknown as AuditEvent, plain: true };
  const cloned = structuredClone(event);
  delete cloned.seq;
  if (seq !== undefined) cloned.seq = seq;
  return { copy: cloned, plain: false };
}

/**
 * The order events are written in everywhere else (producers, the MongoDB store's reads): what
 * reads answer in, whatever order the store keeps.
 */
const PRESENTED: readonly string[] = [
  'id',
  'tenant_id',
  'type',
  'occurred_at',
  'actor',
  'request_id',
  'resource',
  'data',
  'trace_id',
  'span_id',
  'seq',
];

/** A stored event as reads answer it: a copy, its top-level members in PRESENTED order. */
function presentEvent(stored: AuditEvent): AuditEvent {
  const order = PRESENTED.filter((key) => Object.hasOwn(stored, key));
  for (const key of Object.keys(stored)) if (!order.includes(key)) order.push(key);
  const copy = copyMembers(stored, order, [stored], false);
  return copy === NOT_PLAIN ? structuredClone(stored) : (copy as unknown as AuditEvent);
}

const idOf = (event: AuditEvent): string => event.id;

/** ms since the epoch; an unparsable instant (the schema lets none through) counts as the earliest. */
function instantOf(iso: string): number {
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? -Infinity : ms;
}

/** `2026-01-02T03:04:05.678Z`, the form every producer writes: such instants compare as text. */
function isCanonicalInstant(iso: string): boolean {
  return iso.length === 24 && iso.charCodeAt(19) === 46 /* . */ && iso.charCodeAt(23) === 90; /* Z */
}

/**
 * occurred_at within [since, until): compared as text when both sides are canonical (a walk
 * checks thousands of events, and Date.parse is most of the cost), as instants otherwise.
 */
function occurredWithin(
  since: number | undefined,
  until: number | undefined,
): (event: AuditEvent) => boolean {
  const text = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());
  const sinceText = text(since);
  const untilText = text(until);
  const textual =
    (since === undefined || (sinceText !== undefined && isCanonicalInstant(sinceText))) &&
    (until === undefined || (untilText !== undefined && isCanonicalInstant(untilText)));
  return (event) => {
    const o = event.occurred_at;
    if (textual && isCanonicalInstant(o))
      return !((sinceText !== undefined && o < sinceText) || (untilText !== undefined && o >= untilText));
    const at = instantOf(o);
    return !((since !== undefined && at < since) || (until !== undefined && at >= until));
  };
}

/**
 * Events sorted by occurred_at (ties in arrival order), for since/until: the number of events in
 * a time window is two binary searches away.
 */
class ByTime {
  private readonly ats: number[] = [];
  private readonly events: AuditEvent[] = [];

  get size(): number {
    return this.ats.length;
  }

  /** How many events occurred before `at` (ms). */
  countBefore(at: number): number {
    let lo = 0;
    let hi = this.ats.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.ats[mid]! < at) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  insert(event: AuditEvent): void {
    const at = instantOf(event.occurred_at);
    const n = this.ats.length;
    if (n === 0 || this.ats[n - 1]! <= at) {
      this.ats.push(at);
      this.events.push(event);
      return;
    }
    const i = this.countBefore(at + 1);
    this.ats.splice(i, 0, at);
    this.events.splice(i, 0, event);
  }

  /** The events from position `from` (inclusive) to `to` (exclusive), oldest first. */
  *slice(from: number, to: number): Generator<AuditEvent, void, undefined> {
    for (let i = from; i < to; i++) yield this.events[i]!;
  }
}

/** One tenant's events, sorted by id, and the same events by the values the list filters on. */
interface TenantEvents {
  all: SortedById<AuditEvent>;
  byTime: ByTime;
  byType: Map<string, SortedById<AuditEvent>>;
  byResource: Map<string, SortedById<AuditEvent>>;
  byKey: Map<string, SortedById<AuditEvent>>;
  /** Every event but the dashboard's own reads (exclude_dashboard_reads), which may be most of them. */
  notDashboardReads: SortedById<AuditEvent>;
}

function addTo(indexes: Map<string, SortedById<AuditEvent>>, value: string, event: AuditEvent): void {
  valueFor(indexes, value, () => new SortedById(idOf)).insert(event);
}

/**
 * The embedded mode's store: data lives as long as the process. Each tenant has its events sorted
 * by id plus one sorted index per type, resource id and key id, so a page costs O(log n + limit)
 * whatever the other tenants hold: a binary search for the cursor, then a walk of the narrowest
 * index the filters allow (for several types, a merge of their indexes) until limit+1 events
 * matched. The walk checks every filter, so a combination of filters of which only one is used as
 * the index — types with resource_id, key_id with a type, … — reads that index from the cursor
 * down to the last match: at worst the tenant's own events of that index, never another tenant's.
 * since/until: the tenant's events are also sorted by occurred_at, so the window's size is known
 * in O(log n); when the window holds fewer events than the walk would read before reaching it,
 * they are read and sorted instead (O(w log w) for w events in the window), else the walk runs.
 * exclude_dashboard_reads has its index too, every event but the dashboard's own reads: a page
 * costs the same however many of those the log holds.
 * Memory: the events themselves plus five or six references per event in the indexes; see
 * `npm run bench:memory-stores` for the measured cost per 1M events.
 */
export class MemoryEventStore implements EventStore, LogStore {
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
  /** Each tenant's RFC 9162 tree: every perfect subtree's hash (docs/API.md#proving-the-log). */
  private readonly logs = new Map<string, MemoryMerkleTree>();
  /** Each tenant's signed checkpoints, smallest tree_size first. */
  private readonly checkpoints = new Map<string, StoredCheckpoint[]>();

  /**
   * `log: false` is the store without the tamper-evident log (no seq, no leaf, no tree): what the
   * ingest benchmarks (bench/audit-log.ts, bench/audit-ingest.ts) measure the log's own cost
   * against, and nothing else; audit always keeps the log.
   */
  constructor(private readonly options: { log?: boolean } = {}) {}

  async insert(event: AuditEvent): Promise<void> {
    this.store([event]);
  }

  async insertMany(events: AuditEvent[]): Promise<void> {
    this.store(events);
  }

  /**
   * Stores the events in order, each tenant event with the next seq of its tenant's tree, then
   * hashes and appends their leaves in the same order: a batch in one synchronous pass, with no
   * promise per event, and the leaves hashed in one loop after the copies rather than between them
   * (docs/PERFORMANCE.md, "Tamper-evident log benchmark (issue 42)"). No read sees an event before
   * its leaf. An event that fails to copy, or has no canonical JSON (a copy that is not plain is
   * hashed before it is stored), stops the batch there, unstored; the leaves of the events stored
   * before it are appended all the same (a plain copy's JSON.stringify cannot throw).
   */
  private store(events: readonly AuditEvent[]): void {
    /** A plain copy, whose JSON.stringify is its canonical JSON (storedCopy), or the leaf hash of another. */
    const leaves: (
      { log: MemoryMerkleTree; plain: AuditEvent } | { log: MemoryMerkleTree; hash: Uint8Array }
    )[] = [];
    /** Leaves waiting per tree: the next seq is the tree's size + those + 1. */
    const waiting = new Map<MemoryMerkleTree, number>();
    try {
      for (const event of events) {
        // The first write wins, as with a unique _id: a redelivery never overwrites.
        if (this.byId.has(event.id)) continue;
        const log =
          event.tenant_id !== null && this.options.log !== false
            ? valueFor(this.logs, event.tenant_id, () => new MemoryMerkleTree(merkleHasher))
            : undefined;
        // One process, one writer: seqs follow the tree (docs/API.md#proving-the-log). Without the
        // log (the benchmark's baseline only) the copy is the one the store made before it: unsorted.
        const ahead = log ? (waiting.get(log) ?? 0) : 0;
        const seq = log ? log.size + ahead + 1 : undefined;
        const { copy: stored, plain } = storedCopy(event, seq, log !== undefined);
        this.shareCommonStrings(stored);
        if (log) {
          leaves.push(plain ? { log, plain: stored } : { log, hash: auditLeafHash(stored) });
          waiting.set(log, ahead + 1);
        }
        this.index(stored);
      }
    } finally {
      for (const leaf of leaves)
        if ('plain' in leaf) leaf.log.appendHashOf(leafInputOfJson(JSON.stringify(leaf.plain)));
        else leaf.log.append(leaf.hash);
    }
  }

  private index(stored: AuditEvent): void {
    this.byId.set(stored.id, stored);
    if (stored.tenant_id === null) return;
    const tenant = valueFor(this.tenants, stored.tenant_id, () => ({
      all: new SortedById(idOf),
      byTime: new ByTime(),
      byType: new Map(),
      byResource: new Map(),
      byKey: new Map(),
      notDashboardReads: new SortedById(idOf),
    }));
    tenant.all.insert(stored);
    tenant.byTime.insert(stored);
    addTo(tenant.byType, stored.type, stored);
    if (stored.resource) addTo(tenant.byResource, stored.resource.id, stored);
    if (stored.actor.key_id !== undefined) addTo(tenant.byKey, stored.actor.key_id, stored);
    if (!isDashboardRead(stored)) tenant.notDashboardReads.insert(stored);
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

  /** Whether an event with this id is stored (for the journal, which writes each id once). */
  has(id: string): boolean {
    return this.byId.has(id);
  }

  /** How many events are stored, platform events included. */
  get size(): number {
    return this.byId.size;
  }

  async get(tenantId: string, id: string): Promise<AuditEvent | null> {
    const event = this.byId.get(id);
    return event && event.tenant_id === tenantId ? presentEvent(event) : null;
  }

  async list(tenantId: string, q: EventListQuery): Promise<AuditEvent[]> {
    this.scanned = 0;
    const selected = this.select(tenantId, q);
    if (!selected) return [];
    const { all, walk, matches, window } = selected;
    const order = q.order ?? 'desc';
    if (window !== undefined) {
      const { from, to, size } = window;
      // Walking by id reads, before the window, about the events on the far side of it from the
      // cursor (ids and occurred_at mostly agree), in the walked index's share of the tenant:
      // newer than `until` newest first, older than `since` oldest first.
      const behindCursor = q.afterId === undefined ? 0 : all.countBelow(q.afterId);
      const outside =
        order === 'desc'
          ? size - to - (q.afterId === undefined ? 0 : all.size - behindCursor)
          : from - behindCursor;
      const walkEstimate = (Math.max(0, outside) * total(walk)) / all.size + q.limit;
      if (to - from < walkEstimate) {
        // Fewer events in the window than a walk would read: take them all, in order by id.
        const past = (e: AuditEvent) =>
          q.afterId === undefined || (order === 'desc' ? e.id < q.afterId : e.id > q.afterId);
        const inWindow = takeMatching(window.events(), (e) => matches(e) && past(e), Infinity);
        const sign = order === 'desc' ? 1 : -1;
        inWindow.sort((a, b) => (a.id < b.id ? sign : a.id > b.id ? -sign : 0));
        return inWindow.slice(0, q.limit + 1).map(presentEvent);
      }
    }
    return takeMatching(inOrderOf(walk, idOf, order, q.afterId), matches, q.limit + 1).map(presentEvent);
  }

  /** Every match, by the shorter of the time window and the walked index: what `list` pages through. */
  async count(tenantId: string, filters: EventFilters): Promise<number> {
    this.scanned = 0;
    const selected = this.select(tenantId, filters);
    if (!selected) return 0;
    const { walk, matches, window } = selected;
    const events =
      window !== undefined && window.to - window.from < total(walk)
        ? window.events()
        : inOrderOf(walk, idOf, 'desc');
    let n = 0;
    for (const event of events) if (matches(event)) n++;
    return n;
  }

  /**
   * The narrowest index the filters allow (fewest events to walk in the worst case), the test of an
   * event, and with since/until the events of that time window (by occurred_at).
   */
  private select(tenantId: string, q: EventFilters) {
    const tenant = this.tenants.get(tenantId);
    if (!tenant) return undefined;
    const candidates: SortedById<AuditEvent>[][] = [[tenant.all]];
    if (q.types && q.types.length > 0) {
      const unique = [...new Set<string>(q.types)];
      candidates.push(unique.flatMap((t) => tenant.byType.get(t) ?? []));
    }
    if (q.resource_id !== undefined)
      candidates.push([tenant.byResource.get(q.resource_id)].flatMap((i) => i ?? []));
    if (q.key_id !== undefined) candidates.push([tenant.byKey.get(q.key_id)].flatMap((i) => i ?? []));
    if (q.exclude_dashboard_reads) candidates.push([tenant.notDashboardReads]);
    const walk = candidates.reduce((best, c) => (total(c) < total(best) ? c : best));
    if (walk.length === 0) return undefined;

    // An unparsable bound bounds nothing (the route lets none through).
    const bound = (iso: string | undefined) => {
      const ms = iso === undefined ? NaN : Date.parse(iso);
      return Number.isNaN(ms) ? undefined : ms;
    };
    const since = bound(q.since);
    const until = bound(q.until);
    const types = q.types && q.types.length > 0 ? new Set<string>(q.types) : undefined;
    const inTime = since === undefined && until === undefined ? undefined : occurredWithin(since, until);
    const matches = (event: AuditEvent): boolean => {
      this.scanned++;
      if (types && !types.has(event.type)) return false;
      if (q.resource_id !== undefined && event.resource?.id !== q.resource_id) return false;
      if (q.key_id !== undefined && event.actor.key_id !== q.key_id) return false;
      if (q.exclude_dashboard_reads && isDashboardRead(event)) return false;
      return inTime === undefined || inTime(event);
    };
    const { all, byTime } = tenant;
    let window: { from: number; to: number; size: number; events(): Iterable<AuditEvent> } | undefined;
    if (since !== undefined || until !== undefined) {
      const from = since === undefined ? 0 : byTime.countBefore(since);
      const to = until === undefined ? byTime.size : Math.max(from, byTime.countBefore(until));
      window = { from, to, size: byTime.size, events: () => byTime.slice(from, to) };
    }
    return { all, walk, matches, window };
  }

  async listByResource(tenantId: string, resourceId: string, limit: number): Promise<AuditEvent[]> {
    this.scanned = 0;
    const index = this.tenants.get(tenantId)?.byResource.get(resourceId);
    if (!index) return [];
    const counted = () => (this.scanned++, true);
    return takeMatching(index.oldestFirst(), counted, limit + 1).map(cloneEvent);
  }

  // The evidence export's read, on top of listByResource: this store holds every event in memory
  // anyway, so it hands out one copy of the resource's events one by one.
  async *readByResource(tenantId: string, resourceId: string): AsyncIterable<AuditEvent> {
    yield* await this.listByResource(tenantId, resourceId, Number.MAX_SAFE_INTEGER - 1);
  }

  /** The window's events by occurred_at (two binary searches), of every type: a walk of the window only. */
  async countVerifications(
    tenantId: string,
    q: { since: string; until: string; bucket: StatsBucket },
  ): Promise<DecisionCount[]> {
    const tenant = this.tenants.get(tenantId);
    if (!tenant) return [];
    const { byTime } = tenant;
    const from = byTime.countBefore(Date.parse(q.since));
    const to = Math.max(from, byTime.countBefore(Date.parse(q.until)));
    const counts = new Map<string, DecisionCount>();
    for (const event of byTime.slice(from, to)) {
      if (event.type !== 'VERIFICATION_PERFORMED') continue;
      const decision = String(event.data.decision);
      const bucket = bucketKey(new Date(event.occurred_at), q.bucket);
      const key = `${bucket} ${decision}`;
      const found = counts.get(key);
      if (found) found.count++;
      else counts.set(key, { bucket, decision, count: 1 });
    }
    return [...counts.values()];
  }

  async ping(): Promise<void> {}

  async logSize(tenantId: string): Promise<number> {
    return this.logs.get(tenantId)?.size ?? 0;
  }

  async logHashes(tenantId: string, ranges: readonly LeafRange[]): Promise<Uint8Array[]> {
    const log = this.logs.get(tenantId) ?? new MemoryMerkleTree(merkleHasher);
    // Copies (the tree's buffers grow and move), all in one buffer: an export asks for ~100,000
    // hashes, and a buffer each was most of this call (docs/PERFORMANCE.md, "Tamper-evident log
    // benchmark (issue 42)").
    const copies = new Uint8Array(ranges.length * 32);
    return ranges.map(([start, end], i) => {
      const hash = log.rangeHash(start, end);
      copies.set(hash, i * 32);
      return copies.subarray(i * 32, i * 32 + 32);
    });
  }

  async logHeads(): Promise<{ tenantId: string; size: number }[]> {
    return [...this.logs].map(([tenantId, log]) => ({ tenantId, size: log.size }));
  }

  /**
   * Nothing to number: this store gives every tenant event its seq as it stores it, and the journal
   * file (AUDIT_STORE_FILE) is read back in its order at each start, lines written before the log
   * included (docs/OPERATIONS.md, "Events stored before the tamper-evident log"). The report says so.
   */
  async backfillLog(): Promise<BackfillReport[]> {
    return [...this.logs].map(([tenantId, log]) => ({ tenantId, assigned: 0, size: log.size }));
  }

  async saveCheckpoint(checkpoint: StoredCheckpoint): Promise<void> {
    const list = valueFor(this.checkpoints, checkpoint.tenant_id, () => []);
    if (list.some((c) => c.tree_size === checkpoint.tree_size)) return;
    list.push({ ...checkpoint });
    list.sort((a, b) => a.tree_size - b.tree_size);
  }

  async latestCheckpoint(tenantId: string): Promise<StoredCheckpoint | null> {
    const list = this.checkpoints.get(tenantId);
    const last = list?.[list.length - 1];
    return last ? { ...last } : null;
  }

  async getCheckpoint(tenantId: string, treeSize: number): Promise<StoredCheckpoint | null> {
    const found = this.checkpoints.get(tenantId)?.find((c) => c.tree_size === treeSize);
    return found ? { ...found } : null;
  }

  async listCheckpoints(
    tenantId: string,
    q: { limit: number; beforeSize?: number },
  ): Promise<StoredCheckpoint[]> {
    const list = this.checkpoints.get(tenantId) ?? [];
    const out: StoredCheckpoint[] = [];
    for (let i = list.length - 1; i >= 0 && out.length <= q.limit; i--) {
      const c = list[i]!;
      if (q.beforeSize === undefined || c.tree_size < q.beforeSize) out.push({ ...c });
    }
    return out;
  }
}
