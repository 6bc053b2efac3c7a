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
 * Everything identity persists. Every tenant-scoped function takes tenantId first; the one
 * cross-tenant lookup is findApiKeyByHash, because that is how a request's tenant is found.
 * Returns plain objects; uniqueness is decided by the database (unique indexes), and a refused
 * write surfaces as a domain conflict (DuplicateRecord, DuplicateRoleAssignment).
 */
export interface IdentityStore {
  insertTenant(tenant: Tenant): Promise<void>;
  getTenant(tenantId: string): Promise<Tenant | null>;

  /** Refuses a duplicate key id or secret hash with DuplicateRecord. */
  insertApiKey(tenantId: string, record: ApiKeyRecord): Promise<void>;
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
  ): Promise<ApiKey | null>;
  /** Records a use, unless one was recorded less than minIntervalMs before `at`. */
  touchApiKey(tenantId: string, keyId: string, at: string, minIntervalMs: number): Promise<void>;
  /** The only cross-tenant read: resolves a presented secret's hash to its key. */
  findApiKeyByHash(secretHash: string): Promise<ApiKeyRecord | null>;

  /** Refuses a second active assignment for the subject in the tenant with DuplicateRoleAssignment. */
  insertRoleAssignment(tenantId: string, assignment: RoleAssignment): Promise<void>;
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
  ): Promise<RoleAssignment | null>;
  /** active → revoked; null when absent or already revoked. */
  revokeRoleAssignment(tenantId: string, id: string, at: string): Promise<RoleAssignment | null>;

  /** Onboarding requests precede any tenant: they are the platform's, not a tenant's. */
  insertOnboardingRequest(request: OnboardingRequest): Promise<void>;
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
  ): Promise<OnboardingRequest | null>;

  /** null until the tenant saves one. */
  getWidgetConfig(tenantId: string): Promise<WidgetConfig | null>;
  /** Replaces the whole configuration (PUT semantics). */
  putWidgetConfig(tenantId: string, config: WidgetConfig): Promise<void>;

  /** Throws when the backing database is unreachable (readiness). */
  ping(): Promise<void>;
}
