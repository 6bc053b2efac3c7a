import type { AuditEvent, EventType } from '@mandate/shared';

export interface EventListQuery {
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
  limit: number;
  /** Only events with an id below this one (the cursor), so pages never repeat or skip. */
  afterId?: string;
}

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
  /** Newest first by id, up to limit+1 items (the extra one tells the caller there is more). */
  list(tenantId: string, query: EventListQuery): Promise<AuditEvent[]>;
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
