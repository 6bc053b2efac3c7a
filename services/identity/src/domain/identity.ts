import {
  badRequest,
  buildEvent,
  newId,
  toPage,
  type AuditEvent,
  type CallerContext,
  type Clock,
  type EventInput,
  type EventRelay,
  type Page,
} from '@mandate/shared';
import type { IdentityStore } from '../store/identity-store';
import {
  API_KEY_SCOPES,
  DEFAULT_STAGING_KEY_TTL_HOURS,
  LAST_USED_RESOLUTION_MS,
  STAGING_EXPIRED_REASON,
  SECRET_PATTERN,
  USABLE_KEY_STATUSES,
  generateSecret,
  hashSecret,
  hashesEqual,
  isStagingExpired,
  toApiKey,
  type ApiKey,
  type ApiKeyRecord,
  type ApiKeyScope,
} from './api-key';
import {
  ApiKeyNotFound,
  KeyTransitionNotAllowed,
  OnboardingAlreadyDecided,
  OnboardingRequestNotFound,
  PendingSuccessorExists,
  RoleAssignmentConflict,
  RoleAssignmentNotFound,
  RoleNotAssignable,
  TenantNotFound,
} from './errors';
import type { OnboardingRequest, OnboardingStatus } from './onboarding';
import {
  ROLES,
  isPlatformRole,
  isRole,
  permissionsOf,
  type Role,
  type RoleAssignment,
  type RoleAssignmentStatus,
} from './roles';
import type { Plan, Tenant } from './tenant';
import { DEFAULT_WIDGET_CONFIG, type WidgetConfig } from './widget';

/** What a change records; the caller and the time are added when it is stored. */
export type DomainEvent = Omit<EventInput, 'caller' | 'occurredAt'>;

export interface Outcome<T> {
  value: T;
  /** The events stored with the writes (outbox) and handed to the relay, in order. */
  events: AuditEvent[];
}

/** A key together with its secret: exists only in the response to a creation or a rotation. */
export interface IssuedKey {
  key: ApiKey;
  secret: string;
}

export interface ResolvedKey {
  key: ApiKey;
  plan: Plan;
}

export interface ResolvedSubject {
  assignment: RoleAssignment;
  plan: Plan;
}

export const INITIAL_KEY_NAME = 'Initial key';

/** Event data about a key: everything a reader may see, never the secret or its hash. */
function keyData(key: ApiKey): Record<string, unknown> {
  return {
    key_id: key.key_id,
    name: key.name,
    scopes: key.scopes,
    status: key.status,
    replaces_key_id: key.replaces_key_id,
  };
}

const keyResource = (key: ApiKey) => ({ type: 'api_key', id: key.key_id });

function assignmentData(a: RoleAssignment): Record<string, unknown> {
  return { id: a.id, subject_id: a.subject_id, roles: a.roles, permissions: a.permissions, status: a.status };
}

const assignmentResource = (a: RoleAssignment) => ({ type: 'role_assignment', id: a.id });

/**
 * Roles as a tenant may grant them: platform roles are refused outright (403, SPEC §4) before
 * unknown names (400), so probing for platform roles never looks like a typo.
 */
export function assignableRoles(requested: readonly string[]): Role[] {
  const platform = requested.find(isPlatformRole);
  if (platform !== undefined) throw new RoleNotAssignable(platform);
  requested.forEach((role, i) => {
    if (!isRole(role)) throw badRequest(`roles.${i} must be one of: ${ROLES.join(', ')}`);
  });
  return [...new Set(requested as Role[])];
}

/** The operator's view of an onboarding request in events: never the contact address (PII stays in the record). */
function onboardingData(r: OnboardingRequest): Record<string, unknown> {
  return {
    id: r.id,
    organization_name: r.organization_name,
    country: r.country,
    status: r.status,
    tenant_id: r.tenant_id,
  };
}

const onboardingResource = (r: OnboardingRequest) => ({ type: 'onboarding_request', id: r.id });

/**
 * Identity's use cases: tenants, API keys and role assignments. Each write stores the events it
 * records in the same document write (the store's outbox), then hands them to the relay.
 */
export class Identity {
  constructor(
    private readonly store: IdentityStore,
    private readonly clock: Clock,
    private readonly relay?: EventRelay,
    private readonly caller?: CallerContext,
    /** How long a rotation's staging key may wait for activation (STAGING_KEY_TTL_HOURS). */
    private readonly stagingKeyTtlMs = DEFAULT_STAGING_KEY_TTL_HOURS * 3_600_000,
  ) {}

  /** The same use cases on behalf of a caller: its actor and request id go into every event. */
  as(caller: CallerContext | undefined): Identity {
    return new Identity(this.store, this.clock, this.relay, caller, this.stagingKeyTtlMs);
  }

  private now(): string {
    return this.clock.now().toISOString();
  }

  /** A complete event for this caller, built before the write that stores it. */
  private event(e: DomainEvent): AuditEvent {
    return buildEvent({ ...e, caller: this.caller, occurredAt: this.clock.now() });
  }

  /** After a write: its stored events go to the relay (if that fails they wait in the outbox). */
  private async relayed(events: AuditEvent[]): Promise<AuditEvent[]> {
    if (events.length > 0) await this.relay?.publishNow(events);
    return events;
  }

  // ── tenants ────────────────────────────────────────────────────────────────

  /**
   * A platform operator creates a tenant with an initial all-scope key and, optionally, a
   * tenant_admin for the given subject. The writes are sequential (no transaction): the new
   * tenant has no other rows, so only an infrastructure failure can interrupt it.
   */
  async createTenant(input: {
    name: string;
    plan: Plan;
    adminSubjectId?: string;
    /** Set by an onboarding approval, which records the id before the tenant exists. */
    id?: string;
  }): Promise<Outcome<{ tenant: Tenant; issued: IssuedKey; assignment: RoleAssignment | null }>> {
    const tenant: Tenant = {
      id: input.id ?? newId('tnt'),
      name: input.name,
      plan: input.plan,
      status: 'active',
      created_at: this.now(),
    };
    const events = [
      this.event({
        type: 'TENANT_CREATED',
        tenantId: tenant.id,
        resource: { type: 'tenant', id: tenant.id },
        data: { ...tenant },
      }),
    ];
    // Each event rides on the document whose change it records (tenant, key, assignment).
    await this.store.insertTenant(tenant, events);
    await this.relayed(events);

    const issued = await this.issueKey(
      tenant.id,
      { name: INITIAL_KEY_NAME, scopes: [...API_KEY_SCOPES] },
      'API_KEY_CREATED',
    );
    events.push(...issued.events);

    let assignment: RoleAssignment | null = null;
    if (input.adminSubjectId !== undefined) {
      const assigned = await this.assignRoles(tenant.id, {
        subjectId: input.adminSubjectId,
        roles: ['tenant_admin'],
      });
      assignment = assigned.value;
      events.push(...assigned.events);
    }
    return { value: { tenant, issued, assignment }, events };
  }

  async getTenant(tenantId: string): Promise<Tenant> {
    const tenant = await this.store.getTenant(tenantId);
    if (!tenant) throw new TenantNotFound();
    return tenant;
  }

  // ── API keys ───────────────────────────────────────────────────────────────

  /** Inserts a new key together with its creation (or rotation) event. */
  private async issueKey(
    tenantId: string,
    input: { name: string; scopes: ApiKeyScope[]; status?: 'active' | 'staging'; replacesKeyId?: string },
    eventType: 'API_KEY_CREATED' | 'API_KEY_ROTATED',
  ): Promise<IssuedKey & { events: AuditEvent[] }> {
    const secret = generateSecret();
    const record: ApiKeyRecord = {
      key_id: newId('key'),
      tenant_id: tenantId,
      name: input.name,
      scopes: input.scopes,
      status: input.status ?? 'active',
      created_at: this.now(),
      last_used_at: null,
      replaces_key_id: input.replacesKeyId ?? null,
      secret_hash: hashSecret(secret),
    };
    const { secret_hash: _hash, ...key } = record;
    const events = [
      this.event({ type: eventType, tenantId, resource: keyResource(key), data: keyData(key) }),
    ];
    await this.store.insertApiKey(tenantId, record, events);
    await this.relayed(events);
    return { key, secret, events };
  }

  async createApiKey(
    tenantId: string,
    input: { name: string; scopes: ApiKeyScope[] },
  ): Promise<Outcome<IssuedKey>> {
    const { events, ...issued } = await this.issueKey(tenantId, input, 'API_KEY_CREATED');
    return { value: issued, events };
  }

  async listApiKeys(tenantId: string, options: { limit: number; after?: string }): Promise<Page<ApiKey>> {
    const items = await this.store.listApiKeys(tenantId, { limit: options.limit + 1, before: options.after });
    return toPage(items, options.limit, (k) => k.key_id);
  }

  async getApiKey(tenantId: string, keyId: string): Promise<ApiKey> {
    const key = await this.store.getApiKey(tenantId, keyId);
    if (!key) throw new ApiKeyNotFound();
    return key;
  }

  /**
   * Issues a staging key with the old key's name and scopes, usable at once, linked to the old
   * key; the old key stays active until the new one is activated. Only an active key rotates,
   * and only while it has no staging successor (the store refuses a second one: 409).
   */
  async rotateApiKey(tenantId: string, keyId: string): Promise<Outcome<IssuedKey>> {
    const old = await this.getApiKey(tenantId, keyId);
    if (old.status === 'revoked') throw new KeyTransitionNotAllowed('API key is revoked');
    if (old.status !== 'active') throw new KeyTransitionNotAllowed('API key is not active');
    const rotate = () =>
      this.issueKey(
        tenantId,
        { name: old.name, scopes: old.scopes, status: 'staging', replacesKeyId: old.key_id },
        'API_KEY_ROTATED',
      );
    let rotated: Awaited<ReturnType<typeof rotate>>;
    try {
      rotated = await rotate();
    } catch (err) {
      if (!(err instanceof PendingSuccessorExists)) throw err;
      // The pending successor may be past its window but not yet swept: revoke what is due, then
      // try once more; a successor still in its window keeps refusing (409).
      if ((await this.expireStagingKeys()) === 0) throw err;
      rotated = await rotate();
    }
    const { events, ...issued } = rotated;
    return { value: issued, events };
  }

  /** staging → active, then the key it replaces → revoked (activating first keeps a usable key at every moment). */
  async activateApiKey(tenantId: string, keyId: string): Promise<Outcome<ApiKey>> {
    const current = await this.store.getApiKey(tenantId, keyId);
    if (current && isStagingExpired(current, this.clock.now(), this.stagingKeyTtlMs)) {
      await this.expireStagingKey(current);
      throw new KeyTransitionNotAllowed('API key is not staging: its activation window expired');
    }
    let activated: AuditEvent[] = [];
    const key = await this.store.updateApiKeyStatus(
      tenantId,
      keyId,
      ['staging'],
      'active',
      (k) =>
        (activated = [
          this.event({ type: 'API_KEY_ACTIVATED', tenantId, resource: keyResource(k), data: keyData(k) }),
        ]),
    );
    if (!key) {
      await this.getApiKey(tenantId, keyId);
      throw new KeyTransitionNotAllowed('API key is not staging');
    }
    const events = [...(await this.relayed(activated))];
    if (key.replaces_key_id) {
      let revoked: AuditEvent[] = [];
      const replaced = await this.store.updateApiKeyStatus(
        tenantId,
        key.replaces_key_id,
        USABLE_KEY_STATUSES,
        'revoked',
        (r) =>
          (revoked = [
            this.event({
              type: 'API_KEY_REVOKED',
              tenantId,
              resource: keyResource(r),
              data: { ...keyData(r), replaced_by_key_id: key.key_id },
            }),
          ]),
      );
      // Already revoked by hand meanwhile: nothing left to do, nothing to report.
      if (replaced) events.push(...(await this.relayed(revoked)));
    }
    return { value: key, events };
  }

  async revokeApiKey(tenantId: string, keyId: string): Promise<Outcome<ApiKey>> {
    let events: AuditEvent[] = [];
    const key = await this.store.updateApiKeyStatus(
      tenantId,
      keyId,
      USABLE_KEY_STATUSES,
      'revoked',
      (k) =>
        (events = [
          this.event({ type: 'API_KEY_REVOKED', tenantId, resource: keyResource(k), data: keyData(k) }),
        ]),
    );
    if (!key) {
      await this.getApiKey(tenantId, keyId);
      throw new KeyTransitionNotAllowed('API key is already revoked');
    }
    return { value: key, events: await this.relayed(events) };
  }

  /**
   * staging → revoked for a staging key past its activation window, with API_KEY_REVOKED
   * (reason staging_expired). The compare-and-set lets exactly one caller (sweeper, resolve or
   * activate, on any instance) win, so the event is emitted once; true when this call won.
   */
  private async expireStagingKey(key: ApiKey): Promise<boolean> {
    let events: AuditEvent[] = [];
    const revoked = await this.store.updateApiKeyStatus(
      key.tenant_id,
      key.key_id,
      ['staging'],
      'revoked',
      (k) =>
        (events = [
          this.event({
            type: 'API_KEY_REVOKED',
            tenantId: k.tenant_id,
            resource: keyResource(k),
            data: { ...keyData(k), reason: STAGING_EXPIRED_REASON },
          }),
        ]),
    );
    if (revoked) await this.relayed(events);
    return revoked !== null;
  }

  /** The sweeper's pass: revokes every staging key past its activation window; how many this call revoked. */
  async expireStagingKeys(batchSize = 100): Promise<number> {
    let expired = 0;
    for (;;) {
      const cutoff = new Date(this.clock.now().getTime() - this.stagingKeyTtlMs).toISOString();
      const due = await this.store.listStagingKeysCreatedBefore(cutoff, batchSize);
      let won = 0;
      for (const key of due) if (await this.expireStagingKey(key)) won++;
      expired += won;
      // A full batch that changed nothing is another instance's work in progress: leave it to the next pass.
      if (due.length < batchSize || won === 0) return expired;
    }
  }

  /**
   * The gateway's authentication step: a presented secret → its usable key and the tenant's plan.
   * Unknown, revoked, malformed and wrong-tenant secrets all answer the same NOT_FOUND.
   */
  async resolveApiKey(secret: string, expectedTenantId?: string): Promise<ResolvedKey> {
    if (!SECRET_PATTERN.test(secret)) throw new ApiKeyNotFound();
    const hash = hashSecret(secret);
    const record = await this.store.findApiKeyByHash(hash);
    // The index found it by equality already; the constant-time check keeps the comparison itself free of timing signal.
    if (!record || !hashesEqual(record.secret_hash, hash)) throw new ApiKeyNotFound();
    if (!USABLE_KEY_STATUSES.includes(record.status)) throw new ApiKeyNotFound();
    if (expectedTenantId !== undefined && expectedTenantId !== record.tenant_id) throw new ApiKeyNotFound();
    // Refused the moment its window closes, before any sweep; the revocation is persisted here too.
    if (isStagingExpired(record, this.clock.now(), this.stagingKeyTtlMs)) {
      await this.expireStagingKey(toApiKey(record));
      throw new ApiKeyNotFound();
    }
    const tenant = await this.store.getTenant(record.tenant_id);
    if (!tenant) throw new ApiKeyNotFound();
    const { secret_hash: _hash, ...key } = record;
    return { key, plan: tenant.plan };
  }

  /** Records that a key was used; callers treat it as best effort. */
  async recordKeyUse(tenantId: string, keyId: string): Promise<void> {
    await this.store.touchApiKey(tenantId, keyId, this.now(), LAST_USED_RESOLUTION_MS);
  }

  // ── role assignments ───────────────────────────────────────────────────────

  async assignRoles(
    tenantId: string,
    input: { subjectId: string; roles: readonly string[] },
  ): Promise<Outcome<RoleAssignment>> {
    const roles = assignableRoles(input.roles);
    const at = this.now();
    const assignment: RoleAssignment = {
      id: newId('ras'),
      tenant_id: tenantId,
      subject_id: input.subjectId,
      roles,
      permissions: permissionsOf(roles),
      status: 'active',
      created_at: at,
      updated_at: at,
    };
    const events = [
      this.event({
        type: 'TENANT_ROLE_ASSIGNED',
        tenantId,
        resource: assignmentResource(assignment),
        data: assignmentData(assignment),
      }),
    ];
    // The partial unique index refuses a second active assignment (DuplicateRoleAssignment → 409).
    await this.store.insertRoleAssignment(tenantId, assignment, events);
    return { value: assignment, events: await this.relayed(events) };
  }

  async listRoleAssignments(
    tenantId: string,
    options: { limit: number; after?: string; subjectId?: string; status?: RoleAssignmentStatus },
  ): Promise<Page<RoleAssignment>> {
    const items = await this.store.listRoleAssignments(tenantId, {
      limit: options.limit + 1,
      before: options.after,
      subjectId: options.subjectId,
      status: options.status,
    });
    return toPage(items, options.limit, (a) => a.id);
  }

  async getRoleAssignment(tenantId: string, id: string): Promise<RoleAssignment> {
    const a = await this.store.getRoleAssignment(tenantId, id);
    if (!a) throw new RoleAssignmentNotFound();
    return a;
  }

  /**
   * Replaces the roles of an active assignment; the stored permissions follow. A caller cannot
   * drop tenant:write from its own active assignment (SPEC §11), for the same reason it cannot
   * revoke it: a tenant must not lose its last admin by accident.
   */
  async updateRoleAssignment(
    tenantId: string,
    id: string,
    input: { roles: readonly string[]; subjectId?: string },
    callerSubjectId?: string,
  ): Promise<Outcome<RoleAssignment>> {
    const roles = assignableRoles(input.roles);
    const current = await this.getRoleAssignment(tenantId, id);
    if (input.subjectId !== undefined && input.subjectId !== current.subject_id) {
      throw badRequest('subject_id cannot be changed; revoke and assign instead');
    }
    if (
      callerSubjectId !== undefined &&
      current.subject_id === callerSubjectId &&
      current.status === 'active' &&
      current.permissions.includes('tenant:write') &&
      !permissionsOf(roles).includes('tenant:write')
    ) {
      throw new RoleAssignmentConflict('Cannot downgrade your own active role assignment');
    }
    let events: AuditEvent[] = [];
    const updated = await this.store.updateRoleAssignmentRoles(
      tenantId,
      id,
      { roles, permissions: permissionsOf(roles), at: this.now() },
      (written, previous) =>
        (events = [
          this.event({
            type: 'TENANT_ROLE_ASSIGNED',
            tenantId,
            resource: assignmentResource(written),
            data: { ...assignmentData(written), previous_roles: previous.roles },
          }),
        ]),
    );
    if (!updated) throw new RoleAssignmentConflict('Role assignment is revoked');
    return { value: updated, events: await this.relayed(events) };
  }

  /**
   * active → revoked. A caller cannot revoke its own active assignment (SPEC §5), so a tenant
   * cannot lock out its last admin by accident.
   */
  async revokeRoleAssignment(
    tenantId: string,
    id: string,
    callerSubjectId: string | undefined,
  ): Promise<Outcome<RoleAssignment>> {
    const current = await this.getRoleAssignment(tenantId, id);
    if (current.status !== 'active') throw new RoleAssignmentConflict('Role assignment is already revoked');
    if (callerSubjectId !== undefined && current.subject_id === callerSubjectId) {
      throw new RoleAssignmentConflict('Cannot revoke your own active role assignment');
    }
    let events: AuditEvent[] = [];
    const revoked = await this.store.revokeRoleAssignment(
      tenantId,
      id,
      this.now(),
      (written) =>
        (events = [
          this.event({
            type: 'TENANT_ROLE_REVOKED',
            tenantId,
            resource: assignmentResource(written),
            data: assignmentData(written),
          }),
        ]),
    );
    if (!revoked) throw new RoleAssignmentConflict('Role assignment is already revoked');
    return { value: revoked, events: await this.relayed(events) };
  }

  // ── onboarding ─────────────────────────────────────────────────────────────

  async requestOnboarding(input: {
    organizationName: string;
    contactEmail: string;
    country?: string;
    useCase?: string;
  }): Promise<Outcome<OnboardingRequest>> {
    const request: OnboardingRequest = {
      id: newId('onb'),
      organization_name: input.organizationName,
      contact_email: input.contactEmail,
      country: input.country ?? null,
      use_case: input.useCase ?? null,
      status: 'PENDING',
      created_at: this.now(),
      decided_at: null,
      tenant_id: null,
      rejection_reason: null,
    };
    const events = [
      this.event({
        type: 'ONBOARDING_REQUESTED',
        tenantId: null,
        resource: onboardingResource(request),
        data: onboardingData(request),
      }),
    ];
    await this.store.insertOnboardingRequest(request, events);
    return { value: request, events: await this.relayed(events) };
  }

  async listOnboardingRequests(options: {
    limit: number;
    after?: string;
    status?: OnboardingStatus;
  }): Promise<Page<OnboardingRequest>> {
    const items = await this.store.listOnboardingRequests({
      limit: options.limit + 1,
      before: options.after,
      status: options.status,
    });
    return toPage(items, options.limit, (r) => r.id);
  }

  private async pendingRequest(id: string): Promise<OnboardingRequest> {
    const r = await this.store.getOnboardingRequest(id);
    if (!r) throw new OnboardingRequestNotFound();
    if (r.status !== 'PENDING') throw new OnboardingAlreadyDecided(r.status);
    return r;
  }

  /**
   * Decides first (a compare-and-set, so a second approval is 409 and never makes a second
   * tenant), then creates the tenant under the id the decision recorded.
   */
  async approveOnboarding(
    id: string,
    input: { plan: Plan; name?: string; adminSubjectId?: string },
  ): Promise<
    Outcome<{
      request: OnboardingRequest;
      tenant: Tenant;
      issued: IssuedKey;
      assignment: RoleAssignment | null;
    }>
  > {
    const pending = await this.pendingRequest(id);
    const tenantId = newId('tnt');
    // The decision records ONBOARDING_APPROVED with itself; the tenant's own events follow with its writes.
    let approved: AuditEvent[] = [];
    const request = await this.store.decideOnboardingRequest(
      id,
      { status: 'APPROVED', at: this.now(), tenantId },
      (written) =>
        (approved = [
          this.event({
            type: 'ONBOARDING_APPROVED',
            tenantId,
            resource: onboardingResource(written),
            data: onboardingData(written),
          }),
        ]),
    );
    if (!request)
      throw new OnboardingAlreadyDecided((await this.store.getOnboardingRequest(id))?.status ?? 'decided');
    const created = await this.createTenant({
      id: tenantId,
      name: input.name ?? pending.organization_name,
      plan: input.plan,
      adminSubjectId: input.adminSubjectId,
    });
    // Published after the tenant's events (the order readers expect); if the tenant writes failed, the poll publishes it.
    await this.relayed(approved);
    return { value: { request, ...created.value }, events: [...created.events, ...approved] };
  }

  async rejectOnboarding(id: string, input: { reason?: string }): Promise<Outcome<OnboardingRequest>> {
    await this.pendingRequest(id);
    let events: AuditEvent[] = [];
    const request = await this.store.decideOnboardingRequest(
      id,
      { status: 'REJECTED', at: this.now(), rejectionReason: input.reason },
      (written) =>
        (events = [
          this.event({
            type: 'ONBOARDING_REJECTED',
            tenantId: null,
            resource: onboardingResource(written),
            data: { ...onboardingData(written), reason: written.rejection_reason },
          }),
        ]),
    );
    if (!request)
      throw new OnboardingAlreadyDecided((await this.store.getOnboardingRequest(id))?.status ?? 'decided');
    return { value: request, events: await this.relayed(events) };
  }

  // ── widget configuration ───────────────────────────────────────────────────

  async getWidgetConfig(tenantId: string): Promise<WidgetConfig> {
    return (await this.store.getWidgetConfig(tenantId)) ?? structuredClone(DEFAULT_WIDGET_CONFIG);
  }

  async putWidgetConfig(
    tenantId: string,
    input: Omit<WidgetConfig, 'updated_at'>,
  ): Promise<Outcome<WidgetConfig>> {
    const config: WidgetConfig = {
      allowed_origins: [...new Set(input.allowed_origins)],
      theme: input.theme,
      locale: input.locale,
      updated_at: this.now(),
    };
    const events = [
      this.event({
        type: 'WIDGET_CONFIG_UPDATED',
        tenantId,
        resource: { type: 'widget_config', id: tenantId },
        data: { ...config },
      }),
    ];
    await this.store.putWidgetConfig(tenantId, config, events);
    return { value: config, events: await this.relayed(events) };
  }

  /** The gateway's JWT step: a subject's active assignment in a tenant, and the tenant's plan. */
  async resolveSubject(tenantId: string, subjectId: string): Promise<ResolvedSubject> {
    const [assignment, tenant] = await Promise.all([
      this.store.findActiveRoleAssignment(tenantId, subjectId),
      this.store.getTenant(tenantId),
    ]);
    if (!assignment || !tenant) throw new RoleAssignmentNotFound();
    return { assignment, plan: tenant.plan };
  }
}
