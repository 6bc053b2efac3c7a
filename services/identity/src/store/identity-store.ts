import type { AuditEvent, OutboxStore } from '@mandate/shared';
import type { ApiKey, ApiKeyRecord, ApiKeyStatus } from '../domain/api-key';
import type { OnboardingRequest, OnboardingStatus } from '../domain/onboarding';
import type { Role, RoleAssignment, RoleAssignmentStatus } from '../domain/roles';
import type { Tenant } from '../domain/tenant';
import type { WidgetConfig } from '../domain/widget';

export interface ListOptions {
  /** How many items to return at most (callers ask for limit + 1 to learn has_more). */
  limit: number;
  /** Only items with an id below this one (ids sort by creation, so this pages newest first). */
  before?: string;
}

/**
 * The audit events of a conditional update, built from the record as written (and as it was
 * just before): the store calls it while it writes, so the events land in the same atomic write.
 */
export type OutboxFor<T> = (written: T, previous: T) => AuditEvent[];

/**
 * Everything identity persists. Every tenant-scoped function takes tenantId first; the one
 * cross-tenant lookup is findApiKeyByHash, because that is how a request's tenant is found.
 * Returns plain objects; uniqueness is decided by the database (unique indexes), and a refused
 * write surfaces as a domain conflict (DuplicateRecord, DuplicateRoleAssignment).
 *
 * Outbox: every write that records something audited takes its events and stores them in the
 * same single-document write as the change (no transactions: each event rides on the document
 * whose change it records); a relay publishes them and removes them once the broker confirmed.
 */
export interface IdentityStore extends OutboxStore {
  insertTenant(tenant: Tenant, outbox?: AuditEvent[]): Promise<void>;
  getTenant(tenantId: string): Promise<Tenant | null>;

  /**
   * Refuses a duplicate key id or secret hash with DuplicateRecord, and a second staging key
   * replacing the same key with PendingSuccessorExists (decided by the write itself, so two
   * concurrent rotations cannot both succeed).
   */
  insertApiKey(tenantId: string, record: ApiKeyRecord, outbox?: AuditEvent[]): Promise<void>;
  getApiKey(tenantId: string, keyId: string): Promise<ApiKey | null>;
  /** Newest first. */
  listApiKeys(tenantId: string, options: ListOptions): Promise<ApiKey[]>;
  /**
   * Sets the status only if the current one is in `from` (a compare-and-set, so two concurrent
   * transitions cannot both win); returns the updated key, or null when absent or not in `from`.
   */
  updateApiKeyStatus(
    tenantId: string,
    keyId: string,
    from: readonly ApiKeyStatus[],
    to: ApiKeyStatus,
    outbox?: OutboxFor<ApiKey>,
  ): Promise<ApiKey | null>;
  /**
   * The one other cross-tenant read, for the staging-key sweeper: staging keys created at or
   * before `createdAtOrBefore`, oldest first.
   */
  listStagingKeysCreatedBefore(createdAtOrBefore: string, limit: number): Promise<ApiKey[]>;
  /** Records a use, unless one was recorded less than minIntervalMs before `at`. */
  touchApiKey(tenantId: string, keyId: string, at: string, minIntervalMs: number): Promise<void>;
  /** The only cross-tenant read: resolves a presented secret's hash to its key. */
  findApiKeyByHash(secretHash: string): Promise<ApiKeyRecord | null>;

  /** Refuses a second active assignment for the subject in the tenant with DuplicateRoleAssignment. */
  insertRoleAssignment(tenantId: string, assignment: RoleAssignment, outbox?: AuditEvent[]): Promise<void>;
  getRoleAssignment(tenantId: string, id: string): Promise<RoleAssignment | null>;
  findActiveRoleAssignment(tenantId: string, subjectId: string): Promise<RoleAssignment | null>;
  /** Newest first, optionally only one subject's or one status's. */
  listRoleAssignments(
    tenantId: string,
    options: ListOptions & { subjectId?: string; status?: RoleAssignmentStatus },
  ): Promise<RoleAssignment[]>;
  /** Replaces roles and permissions of an active assignment; null when absent or not active. */
  updateRoleAssignmentRoles(
    tenantId: string,
    id: string,
    change: { roles: Role[]; permissions: string[]; at: string },
    outbox?: OutboxFor<RoleAssignment>,
  ): Promise<RoleAssignment | null>;
  /** active → revoked; null when absent or already revoked. */
  revokeRoleAssignment(
    tenantId: string,
    id: string,
    at: string,
    outbox?: OutboxFor<RoleAssignment>,
  ): Promise<RoleAssignment | null>;

  /** Onboarding requests precede any tenant: they are the platform's, not a tenant's. */
  insertOnboardingRequest(request: OnboardingRequest, outbox?: AuditEvent[]): Promise<void>;
  getOnboardingRequest(id: string): Promise<OnboardingRequest | null>;
  listOnboardingRequests(options: ListOptions & { status?: OnboardingStatus }): Promise<OnboardingRequest[]>;
  /**
   * PENDING → APPROVED | REJECTED as a compare-and-set (two operators approving at once: one wins);
   * null when absent or no longer pending.
   */
  decideOnboardingRequest(
    id: string,
    decision: {
      status: Exclude<OnboardingStatus, 'PENDING'>;
      at: string;
      tenantId?: string;
      rejectionReason?: string;
    },
    outbox?: OutboxFor<OnboardingRequest>,
  ): Promise<OnboardingRequest | null>;

  /** null until the tenant saves one. */
  getWidgetConfig(tenantId: string): Promise<WidgetConfig | null>;
  /** Replaces the whole configuration (PUT semantics). */
  putWidgetConfig(tenantId: string, config: WidgetConfig, outbox?: AuditEvent[]): Promise<void>;

  /** Throws when the backing database is unreachable (readiness). */
  ping(): Promise<void>;
}
