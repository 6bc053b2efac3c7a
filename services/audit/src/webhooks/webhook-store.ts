import type { AuditEvent, OutboxStore } from '@mandate/shared/events';
import type { ListOrder } from '@mandate/shared/contract';
import type { WebhookDeliveryStatus } from '../contract';
import type { ClaimedDelivery, WebhookAttempt, WebhookDelivery, WebhookEndpoint } from './webhook';

/** The fields of an endpoint a PATCH, a rotation or the worker may change. */
export type EndpointChanges = Partial<
  Pick<
    WebhookEndpoint,
    'url' | 'event_types' | 'description' | 'status' | 'disabled_reason' | 'failing_since' | 'secrets'
  >
>;

/**
 * An endpoint as a caller read it: a change applies only while the stored one is still at this
 * version, in this tenant (the guard every endpoint write holds in its filter).
 */
export type EndpointRead = Pick<WebhookEndpoint, 'tenant_id' | 'id' | 'version'>;

/** Which delivery, named as the API names it: the tenant's, under that endpoint. */
export type DeliveryKey = Pick<WebhookDelivery, 'tenant_id' | 'endpoint_id' | 'id'>;

/** The delivery as a worker claimed it: its lease token guards the write of the outcome. */
export type DeliveryLease = Pick<ClaimedDelivery, 'id' | 'lease_token'>;

/** A page of a list, newest first: up to limit + 1 after `afterId` (the one more says there is more). */
export interface PageQuery {
  limit: number;
  afterId?: string;
}

/** A page of an endpoint's deliveries, optionally of one status. */
export interface DeliveryPageQuery extends PageQuery {
  status?: WebhookDeliveryStatus;
  /** desc (default): newest first, ids below the cursor; asc: oldest first, ids above it. */
  order?: ListOrder;
}

/** How an attempt ends for the delivery: its new status and next due time. */
export interface AttemptOutcome {
  attempt: WebhookAttempt;
  status: WebhookDeliveryStatus;
  next_attempt_at: string | null;
  /** Counts toward the schedule (false for a manual attempt). */
  scheduled: boolean;
}

/** Attempts to an endpoint since a time: all of them, and those answered with a 2xx. */
export interface AttemptCounts {
  attempts: number;
  succeeded: number;
}

/**
 * Webhook endpoints and their deliveries, memory and MongoDB alike (the contract suite holds both).
 * Every change is one guarded write: an insert refused by a unique index, or an update whose filter
 * holds its precondition (a version, a lease token); a precondition that no longer holds answers
 * null/false and changes nothing. Endpoint changes store their events in the same write (outbox).
 */
export interface WebhookStore extends OutboxStore {
  readonly kind: 'memory' | 'mongo';
  ping(): Promise<void>;

  /** Inserts the endpoint; false when its slot is taken (another create won it: read the slots again). */
  insertEndpoint(endpoint: WebhookEndpoint, events: AuditEvent[]): Promise<boolean>;
  /** The slots in use by the tenant's endpoints. */
  usedSlots(tenantId: string): Promise<number[]>;
  getEndpoint(tenantId: string, id: string): Promise<WebhookEndpoint | null>;
  listEndpoints(tenantId: string, page: PageQuery): Promise<WebhookEndpoint[]>;
  /** The tenant's ENABLED endpoints (the fan-out's question for each event). */
  enabledEndpoints(tenantId: string): Promise<WebhookEndpoint[]>;
  /**
   * Every event type some endpoint of any tenant subscribes to, whatever its status ("*" among
   * them when one takes every type): what the webhook queue is bound to at each connect.
   */
  subscribedTypes(): Promise<string[]>;
  /** Endpoints by id, any tenant (the worker's read for the deliveries it claimed). */
  endpointsByIds(ids: string[]): Promise<WebhookEndpoint[]>;
  /** Applies the changes if the endpoint is still as `read` (version +1, updated_at); null otherwise. */
  updateEndpoint(
    read: EndpointRead,
    changes: EndpointChanges,
    updatedAt: string,
    events: AuditEvent[],
  ): Promise<WebhookEndpoint | null>;
  /**
   * Removes the endpoint if still as `read` (its events stay in the outbox until relayed; its
   * slot is free at once); false otherwise.
   */
  deleteEndpoint(read: EndpointRead, events: AuditEvent[]): Promise<boolean>;

  /** Stores each (endpoint, event) delivery once: a redelivered event adds nothing. */
  insertDeliveries(deliveries: WebhookDelivery[]): Promise<void>;
  getDelivery(tenantId: string, endpointId: string, id: string): Promise<WebhookDelivery | null>;
  listDeliveries(tenantId: string, endpointId: string, page: DeliveryPageQuery): Promise<WebhookDelivery[]>;
  /** How many deliveries listDeliveries would return across its pages for this status (`include_total`). */
  countDeliveries(
    tenantId: string,
    endpointId: string,
    filter: { status?: WebhookDeliveryStatus },
  ): Promise<number>;
  /**
   * Leases up to `limit` PENDING deliveries due at `now` whose lease (if any) has run out, until
   * `leaseUntil`, under a fresh token: one guarded write per delivery, so two workers never hold
   * the same one.
   */
  claimDue(now: Date, leaseUntil: Date, limit: number): Promise<ClaimedDelivery[]>;
  /** Leases one delivery whatever its status and due time (a manual retry), unless another lease holds it. */
  claimOne(delivery: DeliveryKey, now: Date, leaseUntil: Date): Promise<ClaimedDelivery | null>;
  /** Records the attempt and the outcome, and ends the lease, if `lease` still holds it; null otherwise. */
  finishAttempt(lease: DeliveryLease, outcome: AttemptOutcome, at: string): Promise<WebhookDelivery | null>;
  /**
   * The tenant's endpoint's attempts made at or after each of `since` (one count per instant, in
   * that order), read from the attempts its deliveries keep.
   */
  attemptCounts(tenantId: string, endpointId: string, since: readonly Date[]): Promise<AttemptCounts[]>;
  /** Up to `limit` ids of the endpoint's FAILED deliveries created at or after `since`, oldest first. */
  failedSince(tenantId: string, endpointId: string, since: Date, limit: number): Promise<string[]>;
  /**
   * Puts those of `ids` that are still FAILED and not leased back to PENDING, due at `now`, on a
   * fresh schedule (a replay); answers how many it put back. A second call finds them PENDING and
   * changes nothing.
   */
  requeueFailed(tenantId: string, endpointId: string, ids: readonly string[], now: Date): Promise<number>;
  /** PENDING deliveries and the created_at of the oldest (the backlog gauges). */
  backlog(): Promise<{ pending: number; oldestCreatedAt: string | null }>;
}

/**
 * How long a finished delivery (SUCCEEDED or FAILED) is kept after its last attempt, unless the
 * store is told otherwise (`WEBHOOK_DELIVERY_RETENTION_DAYS`): long enough to look into any
 * failure and retry it by hand, short enough that deliveries never pile up. A PENDING delivery is
 * never removed.
 */
export const DEFAULT_DELIVERY_RETENTION_MS = 30 * 24 * 3_600_000;

/** When a delivery that ended with `outcome` at `at` may be removed: null while it is still PENDING. */
export function deliveryExpiry(
  status: WebhookDeliveryStatus,
  at: string,
  retentionMs: number,
): number | null {
  return status === 'PENDING' ? null : Date.parse(at) + retentionMs;
}

/** Attempts kept per delivery (the schedule makes 8; manual retries add more): the newest. */
export const MAX_STORED_ATTEMPTS = 50;
