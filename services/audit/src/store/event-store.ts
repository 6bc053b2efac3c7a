import type { CheckpointClaims, LeafRange } from '@mandate/shared/mandate';
import type { AuditEvent, EventType } from '@mandate/shared/events';
import type { ListOrder } from '@mandate/shared/contract';

/** What a list selects, and a count counts. */
export interface EventFilters {
  /** Any of these types. */
  types?: EventType[];
  /** resource.id */
  resource_id?: string;
  /** actor.key_id: the API key that caused the event (API_CALL events carry it there too). */
  key_id?: string;
  /** occurred_at >= since (inclusive), an ISO 8601 instant. */
  since?: string;
  /** occurred_at < until (exclusive), an ISO 8601 instant. */
  until?: string;
  /** Leave out the dashboard's own reads (isDashboardRead). */
  exclude_dashboard_reads?: boolean;
}

export interface EventListQuery extends EventFilters {
  limit: number;
  /** Only events with an id past this one in `order` (the cursor), so pages never repeat or skip. */
  afterId?: string;
  /** desc (default): newest first, ids below the cursor; asc: oldest first, ids above it. */
  order?: ListOrder;
}

const READ_METHODS: ReadonlySet<unknown> = new Set(['GET', 'HEAD']);

/**
 * One of the dashboard's own reads (docs/API.md#events): an API_CALL of a GET or HEAD that its data
 * says came `via: "dashboard"`. An API_CALL without `via` (recorded before it existed) is none: the
 * filter hides only what the gateway marked as it recorded it (docs/DECISIONS.md#the-dashboards-own-reads).
 */
export const isDashboardRead = (event: Pick<AuditEvent, 'type' | 'data'>): boolean =>
  event.type === 'API_CALL' && event.data.via === 'dashboard' && READ_METHODS.has(event.data.method);

/** A UTC hour (`YYYY-MM-DDTHH`) or day (`YYYY-MM-DD`), the key an event's occurred_at falls in. */
export type StatsBucket = 'hour' | 'day';

/** How many VERIFICATION_PERFORMED events of one bucket carry one `data.decision`. */
export interface DecisionCount {
  /** `YYYY-MM-DDTHH` (hour) or `YYYY-MM-DD` (day), UTC. */
  bucket: string;
  decision: string;
  count: number;
}

/** The bucket key of an instant, as every store computes it. */
export const bucketKey = (at: Date, bucket: StatsBucket): string =>
  at.toISOString().slice(0, bucket === 'hour' ? 13 : 10);

/**
 * Where audit events rest. Writes are idempotent by event id because delivery is at-least-once:
 * the database's unique `_id` decides, never a read before the write. Reads are tenant-scoped;
 * events without a tenant (platform events) are never returned by them.
 */
export interface EventStore {
  readonly kind: 'memory' | 'mongo';
  /** Stores the event once; a second insert of the same id is a success that changes nothing. */
  insert(event: AuditEvent): Promise<void>;
  /** Same idempotency for a batch; duplicates inside the batch or already stored are skipped. */
  insertMany(events: AuditEvent[]): Promise<void>;
  get(tenantId: string, id: string): Promise<AuditEvent | null>;
  /** By id in `order` (newest first unless told), up to limit+1 items (the extra one tells the caller there is more). */
  list(tenantId: string, query: EventListQuery): Promise<AuditEvent[]>;
  /** How many events `list` would return across all its pages for these filters (`include_total`). */
  count(tenantId: string, filters: EventFilters): Promise<number>;
  /**
   * Every event about one resource, oldest first by id (the evidence export), up to limit+1 items
   * so the caller can tell that there are more than it is willing to bundle.
   */
  listByResource(tenantId: string, resourceId: string, limit: number): Promise<AuditEvent[]>;
  /**
   * Every event about one resource, oldest first by id, read with a cursor (batches), so the
   * evidence export streams a bundle of any size without holding it.
   */
  readByResource(tenantId: string, resourceId: string): AsyncIterable<AuditEvent>;
  /**
   * The tenant's VERIFICATION_PERFORMED events with occurred_at in [since, until), counted per
   * UTC bucket and `data.decision`, in any order, counted by the store (no event is returned).
   */
  countVerifications(
    tenantId: string,
    query: { since: string; until: string; bucket: StatsBucket },
  ): Promise<DecisionCount[]>;
  /** Throws when the store cannot be reached (readiness). */
  ping(): Promise<void>;
}

/**
 * The tenants' tamper-evident logs (docs/API.md#proving-the-log), kept by every EventStore adapter
 * next to the events: insert/insertMany give each tenant event the next `seq` (atomically in the
 * store, so several audit replicas never share or skip one; a redelivered event keeps its first)
 * and append its leaf hash to the tenant's RFC 9162 tree, whose perfect subtrees are kept so that
 * appending and proving are O(log n).
 */
export interface LogStore {
  /** How many leaves the tenant's tree has (its highest seq; 0 when none). */
  logSize(tenantId: string): Promise<number>;
  /** The RFC 9162 tree hash (MTH) of each range of leaves, in order; a range past logSize throws. */
  logHashes(tenantId: string, ranges: readonly LeafRange[]): Promise<Uint8Array[]>;
  /** Every tenant with a log and its size, for the periodic checkpoints. */
  logHeads(): Promise<{ tenantId: string; size: number }[]>;
  /** Stores a signed checkpoint; a second one of the same tenant and tree_size changes nothing. */
  saveCheckpoint(checkpoint: StoredCheckpoint): Promise<void>;
  /** The checkpoint of the largest tree_size, or null. */
  latestCheckpoint(tenantId: string): Promise<StoredCheckpoint | null>;
  /** The checkpoint of exactly this tree_size, or null. */
  getCheckpoint(tenantId: string, treeSize: number): Promise<StoredCheckpoint | null>;
  /** Largest tree_size first, only those below `beforeSize` when given, up to limit+1 items. */
  listCheckpoints(
    tenantId: string,
    query: { limit: number; beforeSize?: number },
  ): Promise<StoredCheckpoint[]>;
  /**
   * The one-time backfill of events stored before the log (docs/OPERATIONS.md, "Events stored
   * before the tamper-evident log"): every tenant event without `seq` gets the tenant's next one,
   * oldest id first, and its leaf. Idempotent and resumable: an event with a `seq` is skipped.
   */
  backfillLog(options?: BackfillOptions): Promise<BackfillReport[]>;
}

export interface BackfillOptions {
  /** Events read and numbered at a time (default 500). */
  batchSize?: number;
  /** Called after each batch, for the operator's progress line. */
  onBatch?: (progress: { tenantId: string; assigned: number; size: number }) => void;
}

/** One tenant after the backfill: how many events got a seq now, and the log's size. */
export interface BackfillReport {
  tenantId: string;
  assigned: number;
  size: number;
}

/** What audit runs on: the events and their logs, in one store. */
export type AuditStore = EventStore & LogStore;

/** A signed checkpoint as stored and served: its claims and the compact JWS over them. */
export interface StoredCheckpoint extends CheckpointClaims {
  jws: string;
}
