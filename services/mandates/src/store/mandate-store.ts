import type { AuditEvent, OutboxStore } from '@mandate/shared/events';
import type { ListOrder } from '@mandate/shared/contract';
import type { Mandate, MandateState } from '../domain/mandate';
import type { AuthorizationStore } from './authorization-store';
import type {
  PublishedStatusList,
  StatusEntry,
  StatusListRecord,
  StatusSlot,
} from '../status-lists/status-list';

/** What a list selects, and a count counts. */
export interface MandateFilters {
  /** Matched against the effective state at `now` (expired ACTIVE/SUSPENDED count as EXPIRED). */
  state?: MandateState;
  principal_id?: string;
  delegate_id?: string;
  /** Literal, case-insensitive substring of the parties' ids and names (searchTextOf). */
  q?: string;
  now: Date;
}

export interface ListMandatesQuery extends MandateFilters {
  limit: number;
  /** Only ids past this one (the cursor) in `order`: stable under concurrent inserts. */
  afterId?: string;
  /** desc (default): newest first, ids below the cursor; asc: oldest first, ids above it. */
  order?: ListOrder;
}

export interface TransitionPatch {
  state: MandateState;
  version: number;
  updated_at: string;
}

/**
 * Every function takes the tenant first: no query can forget the tenant filter. The outbox
 * (OutboxStore) holds the audit events of each change, written in the same atomic write as the
 * change itself and published by the relay; the one cross-tenant pair of queries is the relay's.
 */
/** A create's Idempotency-Key, hashed with its caller (requestKeyOf), and the digest of what it asked for. */
export interface CreateRequest {
  key: string;
  digest: string;
}

export interface MandateStore extends OutboxStore {
  readonly kind: 'memory' | 'mongo';
  /** Spend authorizations and budget periods (docs/API.md#budgets); their events share this outbox. */
  readonly authorizations: AuthorizationStore;
  /**
   * Stores the mandate and, in the same write, the events that record its creation; with `slot`,
   * its status-list entry (refused, like a duplicate id, if that slot is somehow taken); with
   * `request`, the key a retry finds it by and what that request asked for (docs/API.md, "Idempotency").
   */
  create(
    tenantId: string,
    mandate: Mandate,
    outbox?: AuditEvent[],
    slot?: StatusSlot,
    request?: CreateRequest,
  ): Promise<Mandate>;
  /**
   * The mandate created under `key` (the caller's Idempotency-Key, hashed: requestKeyOf) and the
   * digest of the request that created it (null for one stored without), null when none was. With
   * a request key, `create` refuses a second mandate for it (a conflict).
   */
  findByRequestKey(
    tenantId: string,
    key: string,
  ): Promise<{ mandate: Mandate; digest: string | null } | null>;
  /** null when absent or another tenant's. */
  get(tenantId: string, id: string): Promise<Mandate | null>;
  /** By id in `order` (newest first unless told), up to `limit + 1` items so the caller can tell whether there is more. */
  list(tenantId: string, query: ListMandatesQuery): Promise<Mandate[]>;
  /** How many mandates `list` would return across all its pages for these filters (`include_total`). */
  count(tenantId: string, filters: MandateFilters): Promise<number>;
  /**
   * Applies the patch only if the stored version is still `expectedVersion` (optimistic
   * concurrency). Returns the updated mandate, or null when it changed meanwhile (or is absent).
   * The outbox events are written with the patch, atomically: both or neither.
   */
  transition(
    tenantId: string,
    id: string,
    expectedVersion: number,
    patch: TransitionPatch,
    outbox?: AuditEvent[],
  ): Promise<Mandate | null>;
  /**
   * For the expiry sweeper, the one query across tenants: ACTIVE or SUSPENDED mandates whose
   * expires_at ≤ now, soonest expiry first, at most `limit`.
   */
  findDue(now: Date, limit: number): Promise<Mandate[]>;
  /**
   * Status lists (docs/DECISIONS.md, "Status lists (v3)") span tenants, like the sweeper's query: a list's entries are whichever
   * mandates were created while it was open. The next free slot of the open list, from an atomic
   * counter (never check-then-insert); a full list closes and the next one opens. Never reused.
   */
  allocateStatusSlot(): Promise<StatusSlot>;
  getStatusList(listId: string): Promise<StatusListRecord | null>;
  /** Every mandate holding a slot of the list, with its stored state. */
  statusEntries(listId: string): Promise<StatusEntry[]>;
  /**
   * Replaces the published token if the stored one is still `expectedEtag` (null: none yet), with
   * the events recording it in the same write; false when another replica published meanwhile.
   */
  publishStatusList(
    listId: string,
    expectedEtag: string | null,
    published: PublishedStatusList,
    outbox?: AuditEvent[],
  ): Promise<boolean>;
  /** Readiness: throws when the backing store is unreachable. */
  ping(): Promise<void>;
}
