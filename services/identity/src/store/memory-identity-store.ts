import { MemoryOutbox, SortedById, takeMatching, type AuditEvent } from '@mandate/shared';
import type { ApiKey, ApiKeyRecord, ApiKeyStatus } from '../domain/api-key';
import { toApiKey } from '../domain/api-key';
import { DuplicateRecord, DuplicateRoleAssignment, PendingSuccessorExists } from '../domain/errors';
import type { OnboardingRequest, OnboardingStatus } from '../domain/onboarding';
import type { Role, RoleAssignment, RoleAssignmentStatus } from '../domain/roles';
import type { Tenant } from '../domain/tenant';
import type { WidgetConfig } from '../domain/widget';
import type { IdentityStore, ListOptions, OutboxFor } from './identity-store';

const same = (id: string): string => id;

/** The ids sorted in `indexes` under `value` (created empty on first use). */
function sortedIds<K>(indexes: Map<K, SortedById<string>>, value: K): SortedById<string> {
  let index = indexes.get(value);
  if (!index) indexes.set(value, (index = new SortedById(same)));
  return index;
}

/**
 * The embedded mode's store. Maps keyed the way the Mongo unique indexes are, so the same
 * writes are refused; values are cloned in and out so callers never share state with it.
 * Lists walk ids kept sorted (per tenant, and per filter value: subject, status), from a binary
 * search for the cursor, so a page costs O(log n + limit); an assignment list filtered by both
 * subject and status walks the subject's ids.
 */
export class MemoryIdentityStore implements IdentityStore {
  private tenants = new Map<string, Tenant>();
  /** tenant_id → key_id → record */
  private keys = new Map<string, Map<string, ApiKeyRecord>>();
  /** tenant_id → key ids, sorted */
  private keyIds = new Map<string, SortedById<string>>();
  /** secret_hash → {tenant_id, key_id}: the unique hash index. */
  private keysByHash = new Map<string, { tenantId: string; keyId: string }>();
  /** tenant_id → id → assignment */
  private assignments = new Map<string, Map<string, RoleAssignment>>();
  /** tenant_id → assignment ids sorted: all, by subject_id, by status */
  private assignmentIds = new Map<
    string,
    {
      all: SortedById<string>;
      bySubject: Map<string, SortedById<string>>;
      byStatus: Map<RoleAssignmentStatus, SortedById<string>>;
    }
  >();
  private onboarding = new Map<string, OnboardingRequest>();
  /** Onboarding request ids sorted: all, by status */
  private onboardingIds = {
    all: new SortedById(same),
    byStatus: new Map<OnboardingStatus, SortedById<string>>(),
  };
  private widgets = new Map<string, WidgetConfig>();
  /** Unsent events by record ("collection:key"). */
  private readonly outbox = new MemoryOutbox();

  private addToOutbox(record: string, events: AuditEvent[] | undefined): void {
    this.outbox.add(record, events);
  }

  async pendingEvents(limit: number): Promise<AuditEvent[]> {
    return this.outbox.events(limit);
  }

  async markSent(eventIds: string[]): Promise<void> {
    this.outbox.markSent(eventIds);
  }

  async insertTenant(tenant: Tenant, outbox?: AuditEvent[]): Promise<void> {
    if (this.tenants.has(tenant.id)) throw new DuplicateRecord('Tenant');
    this.tenants.set(tenant.id, structuredClone(tenant));
    this.addToOutbox(`tenant:${tenant.id}`, outbox);
  }

  async getTenant(tenantId: string): Promise<Tenant | null> {
    const t = this.tenants.get(tenantId);
    return t ? structuredClone(t) : null;
  }

  private tenantKeys(tenantId: string): Map<string, ApiKeyRecord> {
    let m = this.keys.get(tenantId);
    if (!m) this.keys.set(tenantId, (m = new Map()));
    return m;
  }

  async insertApiKey(tenantId: string, record: ApiKeyRecord, outbox?: AuditEvent[]): Promise<void> {
    const keys = this.tenantKeys(tenantId);
    if (keys.has(record.key_id) || this.keysByHash.has(record.secret_hash))
      throw new DuplicateRecord('API key');
    // The Mongo adapter's partial unique index: one staging successor per replaced key.
    if (
      record.status === 'staging' &&
      record.replaces_key_id !== null &&
      [...keys.values()].some((k) => k.status === 'staging' && k.replaces_key_id === record.replaces_key_id)
    )
      throw new PendingSuccessorExists();
    keys.set(record.key_id, structuredClone({ ...record, tenant_id: tenantId }));
    this.keysByHash.set(record.secret_hash, { tenantId, keyId: record.key_id });
    sortedIds(this.keyIds, tenantId).insert(record.key_id);
    this.addToOutbox(`api_key:${tenantId}:${record.key_id}`, outbox);
  }

  async getApiKey(tenantId: string, keyId: string): Promise<ApiKey | null> {
    const r = this.keys.get(tenantId)?.get(keyId);
    return r ? toApiKey(structuredClone(r)) : null;
  }

  async listApiKeys(tenantId: string, { limit, before }: ListOptions): Promise<ApiKey[]> {
    const keys = this.keys.get(tenantId);
    const ids = this.keyIds.get(tenantId);
    if (!keys || !ids) return [];
    return takeMatching(ids.newestFirst(before), () => true, limit).map((id) =>
      toApiKey(structuredClone(keys.get(id)!)),
    );
  }

  async updateApiKeyStatus(
    tenantId: string,
    keyId: string,
    from: readonly ApiKeyStatus[],
    to: ApiKeyStatus,
    outbox?: OutboxFor<ApiKey>,
  ): Promise<ApiKey | null> {
    const r = this.keys.get(tenantId)?.get(keyId);
    if (!r || !from.includes(r.status)) return null;
    const previous = toApiKey(structuredClone(r));
    r.status = to;
    const written = toApiKey(structuredClone(r));
    this.addToOutbox(`api_key:${tenantId}:${keyId}`, outbox?.(written, previous));
    return written;
  }

  async listStagingKeysCreatedBefore(createdAtOrBefore: string, limit: number): Promise<ApiKey[]> {
    const cutoff = Date.parse(createdAtOrBefore);
    return [...this.keys.values()]
      .flatMap((m) => [...m.values()])
      .filter((k) => k.status === 'staging' && Date.parse(k.created_at) <= cutoff)
      .sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0))
      .slice(0, limit)
      .map((r) => toApiKey(structuredClone(r)));
  }

  async touchApiKey(tenantId: string, keyId: string, at: string, minIntervalMs: number): Promise<void> {
    const r = this.keys.get(tenantId)?.get(keyId);
    if (!r) return;
    if (r.last_used_at === null || Date.parse(r.last_used_at) <= Date.parse(at) - minIntervalMs)
      r.last_used_at = at;
  }

  async findApiKeyByHash(secretHash: string): Promise<ApiKeyRecord | null> {
    const ref = this.keysByHash.get(secretHash);
    const r = ref && this.keys.get(ref.tenantId)?.get(ref.keyId);
    return r ? structuredClone(r) : null;
  }

  private tenantAssignments(tenantId: string): Map<string, RoleAssignment> {
    let m = this.assignments.get(tenantId);
    if (!m) this.assignments.set(tenantId, (m = new Map()));
    return m;
  }

  private tenantAssignmentIds(tenantId: string) {
    let ids = this.assignmentIds.get(tenantId);
    if (!ids)
      this.assignmentIds.set(
        tenantId,
        (ids = { all: new SortedById(same), bySubject: new Map(), byStatus: new Map() }),
      );
    return ids;
  }

  /** The subject's assignments in the tenant (a few), newest first. */
  private subjectAssignments(tenantId: string, subjectId: string): RoleAssignment[] {
    const all = this.assignments.get(tenantId);
    const ids = this.assignmentIds.get(tenantId)?.bySubject.get(subjectId);
    return all && ids ? [...ids.newestFirst()].map((id) => all.get(id)!) : [];
  }

  async insertRoleAssignment(
    tenantId: string,
    assignment: RoleAssignment,
    outbox?: AuditEvent[],
  ): Promise<void> {
    const all = this.tenantAssignments(tenantId);
    if (all.has(assignment.id)) throw new DuplicateRecord('Role assignment');
    // Mirrors the partial unique index {tenant_id, subject_id} where status = 'active'.
    if (assignment.status === 'active') {
      for (const a of this.subjectAssignments(tenantId, assignment.subject_id)) {
        if (a.status === 'active') throw new DuplicateRoleAssignment();
      }
    }
    all.set(assignment.id, structuredClone({ ...assignment, tenant_id: tenantId }));
    const ids = this.tenantAssignmentIds(tenantId);
    ids.all.insert(assignment.id);
    sortedIds(ids.bySubject, assignment.subject_id).insert(assignment.id);
    sortedIds(ids.byStatus, assignment.status).insert(assignment.id);
    this.addToOutbox(`role_assignment:${tenantId}:${assignment.id}`, outbox);
  }

  async getRoleAssignment(tenantId: string, id: string): Promise<RoleAssignment | null> {
    const a = this.assignments.get(tenantId)?.get(id);
    return a ? structuredClone(a) : null;
  }

  async findActiveRoleAssignment(tenantId: string, subjectId: string): Promise<RoleAssignment | null> {
    const active = this.subjectAssignments(tenantId, subjectId).find((a) => a.status === 'active');
    return active ? structuredClone(active) : null;
  }

  async revokeRoleAssignment(
    tenantId: string,
    id: string,
    at: string,
    outbox?: OutboxFor<RoleAssignment>,
  ): Promise<RoleAssignment | null> {
    const a = this.assignments.get(tenantId)?.get(id);
    if (!a || a.status !== 'active') return null;
    const previous = structuredClone(a);
    a.status = 'revoked';
    a.updated_at = at;
    const byStatus = this.tenantAssignmentIds(tenantId).byStatus;
    byStatus.get('active')?.remove(id);
    sortedIds(byStatus, 'revoked').insert(id);
    this.addToOutbox(`role_assignment:${tenantId}:${id}`, outbox?.(structuredClone(a), previous));
    return structuredClone(a);
  }

  async listRoleAssignments(
    tenantId: string,
    { limit, before, subjectId, status }: ListOptions & { subjectId?: string; status?: RoleAssignmentStatus },
  ): Promise<RoleAssignment[]> {
    const all = this.assignments.get(tenantId);
    const ids = this.assignmentIds.get(tenantId);
    if (!all || !ids) return [];
    const walk =
      subjectId !== undefined
        ? ids.bySubject.get(subjectId)
        : status !== undefined
          ? ids.byStatus.get(status)
          : ids.all;
    if (!walk) return [];
    const matches = (id: string) => status === undefined || all.get(id)!.status === status;
    return takeMatching(walk.newestFirst(before), matches, limit).map((id) => structuredClone(all.get(id)!));
  }

  async updateRoleAssignmentRoles(
    tenantId: string,
    id: string,
    change: { roles: Role[]; permissions: string[]; at: string },
    outbox?: OutboxFor<RoleAssignment>,
  ): Promise<RoleAssignment | null> {
    const a = this.assignments.get(tenantId)?.get(id);
    if (!a || a.status !== 'active') return null;
    const previous = structuredClone(a);
    a.roles = [...change.roles];
    a.permissions = [...change.permissions];
    a.updated_at = change.at;
    this.addToOutbox(`role_assignment:${tenantId}:${id}`, outbox?.(structuredClone(a), previous));
    return structuredClone(a);
  }

  async insertOnboardingRequest(request: OnboardingRequest, outbox?: AuditEvent[]): Promise<void> {
    if (this.onboarding.has(request.id)) throw new DuplicateRecord('Onboarding request');
    this.onboarding.set(request.id, structuredClone(request));
    this.onboardingIds.all.insert(request.id);
    sortedIds(this.onboardingIds.byStatus, request.status).insert(request.id);
    this.addToOutbox(`onboarding:${request.id}`, outbox);
  }

  async getOnboardingRequest(id: string): Promise<OnboardingRequest | null> {
    const r = this.onboarding.get(id);
    return r ? structuredClone(r) : null;
  }

  async listOnboardingRequests({
    limit,
    before,
    status,
  }: ListOptions & { status?: OnboardingStatus }): Promise<OnboardingRequest[]> {
    const walk = status === undefined ? this.onboardingIds.all : this.onboardingIds.byStatus.get(status);
    if (!walk) return [];
    return takeMatching(walk.newestFirst(before), () => true, limit).map((id) =>
      structuredClone(this.onboarding.get(id)!),
    );
  }

  async decideOnboardingRequest(
    id: string,
    decision: {
      status: Exclude<OnboardingStatus, 'PENDING'>;
      at: string;
      tenantId?: string;
      rejectionReason?: string;
    },
    outbox?: OutboxFor<OnboardingRequest>,
  ): Promise<OnboardingRequest | null> {
    const r = this.onboarding.get(id);
    if (!r || r.status !== 'PENDING') return null;
    const previous = structuredClone(r);
    this.onboardingIds.byStatus.get(r.status)?.remove(id);
    sortedIds(this.onboardingIds.byStatus, decision.status).insert(id);
    r.status = decision.status;
    r.decided_at = decision.at;
    r.tenant_id = decision.tenantId ?? null;
    r.rejection_reason = decision.rejectionReason ?? null;
    this.addToOutbox(`onboarding:${id}`, outbox?.(structuredClone(r), previous));
    return structuredClone(r);
  }

  async getWidgetConfig(tenantId: string): Promise<WidgetConfig | null> {
    const w = this.widgets.get(tenantId);
    return w ? structuredClone(w) : null;
  }

  async putWidgetConfig(tenantId: string, config: WidgetConfig, outbox?: AuditEvent[]): Promise<void> {
    this.widgets.set(tenantId, structuredClone(config));
    this.addToOutbox(`widget:${tenantId}`, outbox);
  }

  async ping(): Promise<void> {}
}
