import { isDuplicateKeyError, type AuditEvent, type MongoQueryShape } from '@mandate/shared';
import { Schema, type Connection, type Model } from 'mongoose';
import type { ApiKey, ApiKeyRecord, ApiKeyScope, ApiKeyStatus } from '../domain/api-key';
import { DuplicateRecord, DuplicateRoleAssignment, PendingSuccessorExists } from '../domain/errors';
import type { OnboardingRequest, OnboardingStatus } from '../domain/onboarding';
import type { Role, RoleAssignment, RoleAssignmentStatus } from '../domain/roles';
import type { Plan, Tenant, TenantStatus } from '../domain/tenant';
import type { WidgetConfig } from '../domain/widget';
import type { IdentityStore, ListOptions, OutboxFor } from './identity-store';

/**
 * Every document may carry `outbox`: audit events of its own changes not yet confirmed by the
 * broker, written by the same single-document insert or update as the change (no transactions).
 */
interface WithOutbox {
  outbox?: AuditEvent[];
}
const outboxField = { type: [Schema.Types.Mixed], default: undefined };
/** The relay's query ({ 'outbox.id': { $gt: '' } }: only documents with unsent events have keys) and markSent's $in. */
const OUTBOX_INDEX = { 'outbox.id': 1 } as const;

/** $push of the events with the change, or nothing. */
const pushOutbox = (events: AuditEvent[] | undefined) =>
  events && events.length > 0 ? { $push: { outbox: { $each: events } } } : {};

/** A conditional update retried this often when the document changed between its read and its write. */
const MAX_CAS_ATTEMPTS = 5;

interface TenantDoc extends WithOutbox {
  tenant_id: string;
  name: string;
  plan: Plan;
  status: TenantStatus;
  created_at: Date;
}

interface ApiKeyDoc extends WithOutbox {
  tenant_id: string;
  key_id: string;
  name: string;
  scopes: ApiKeyScope[];
  status: ApiKeyStatus;
  secret_hash: string;
  created_at: Date;
  last_used_at: Date | null;
  replaces_key_id: string | null;
}

interface RoleAssignmentDoc extends WithOutbox {
  tenant_id: string;
  assignment_id: string;
  subject_id: string;
  roles: Role[];
  permissions: string[];
  status: RoleAssignmentStatus;
  created_at: Date;
  updated_at: Date;
}

const tenantSchema = new Schema<TenantDoc>(
  {
    tenant_id: { type: String, required: true },
    name: { type: String, required: true },
    plan: { type: String, required: true },
    status: { type: String, required: true },
    created_at: { type: Date, required: true },
    outbox: outboxField,
  },
  { collection: 'tenants', versionKey: false, autoIndex: false },
);
// getTenant: { tenant_id }; also refuses a second tenant with the same id.
tenantSchema.index({ tenant_id: 1 }, { unique: true });

const apiKeySchema = new Schema<ApiKeyDoc>(
  {
    tenant_id: { type: String, required: true },
    key_id: { type: String, required: true },
    name: { type: String, required: true },
    scopes: { type: [String], required: true },
    status: { type: String, required: true },
    secret_hash: { type: String, required: true },
    created_at: { type: Date, required: true },
    last_used_at: { type: Date, default: null },
    replaces_key_id: { type: String, default: null },
    outbox: outboxField,
  },
  { collection: 'api_keys', versionKey: false, autoIndex: false },
);
// findApiKeyByHash: { secret_hash }, resolving every authenticated request; unique so one secret names one key.
apiKeySchema.index({ secret_hash: 1 }, { unique: true });
// getApiKey, updateApiKeyStatus, touchApiKey: { tenant_id, key_id } (status, last_used_at checked on the one
// document found); listApiKeys: { tenant_id, key_id < cursor } sorted { key_id: -1 }, this index walked
// backwards; unique so a key id exists once per tenant.
apiKeySchema.index({ tenant_id: 1, key_id: 1 }, { unique: true });
// insertApiKey of a rotation's successor: partial unique so the database, not a check-then-insert,
// keeps at most one staging successor per replaced key (two concurrent rotations: one wins). Only
// keys that replace one are in it: MongoDB indexes a null replaces_key_id too, and two staging keys
// without a predecessor must not collide.
apiKeySchema.index(
  { tenant_id: 1, replaces_key_id: 1 },
  {
    unique: true,
    partialFilterExpression: { status: 'staging', replaces_key_id: { $type: 'string' } },
    name: 'one_staging_successor_per_key',
  },
);
// listStagingKeysCreatedBefore(cutoff): the staging-key sweeper, {status: staging, created_at ≤ cutoff} oldest first.
apiKeySchema.index({ status: 1, created_at: 1 });

const roleAssignmentSchema = new Schema<RoleAssignmentDoc>(
  {
    tenant_id: { type: String, required: true },
    assignment_id: { type: String, required: true },
    subject_id: { type: String, required: true },
    roles: { type: [String], required: true },
    permissions: { type: [String], required: true },
    status: { type: String, required: true },
    created_at: { type: Date, required: true },
    updated_at: { type: Date, required: true },
    outbox: outboxField,
  },
  { collection: 'role_assignments', versionKey: false, autoIndex: false },
);
// getRoleAssignment, revokeRoleAssignment, updateRoleAssignmentRoles: { tenant_id, assignment_id } (status,
// roles, updated_at checked on the one document found); listRoleAssignments without filters:
// { tenant_id, assignment_id < cursor } sorted { assignment_id: -1 }, this index walked backwards.
roleAssignmentSchema.index({ tenant_id: 1, assignment_id: 1 }, { unique: true });
// listRoleAssignments?subject_id=: { tenant_id, subject_id, assignment_id < cursor } sorted { assignment_id: -1 }
// (status checked on the documents found). The partial index below cannot serve it: it holds active ones only.
roleAssignmentSchema.index({ tenant_id: 1, subject_id: 1, assignment_id: -1 });
// listRoleAssignments?status=: { tenant_id, status, assignment_id < cursor } sorted { assignment_id: -1 }.
roleAssignmentSchema.index({ tenant_id: 1, status: 1, assignment_id: -1 });
// findActiveRoleAssignment: { tenant_id, subject_id, status: 'active' } for JWT callers; partial unique so the database, not a
// check-then-insert, keeps one ACTIVE assignment per subject per tenant (revoked ones may pile up).
roleAssignmentSchema.index(
  { tenant_id: 1, subject_id: 1 },
  { unique: true, partialFilterExpression: { status: 'active' }, name: 'one_active_assignment_per_subject' },
);

interface OnboardingDoc extends WithOutbox {
  request_id: string;
  organization_name: string;
  contact_email: string;
  country: string | null;
  use_case: string | null;
  status: OnboardingStatus;
  created_at: Date;
  decided_at: Date | null;
  tenant_id: string | null;
  rejection_reason: string | null;
}

const onboardingSchema = new Schema<OnboardingDoc>(
  {
    request_id: { type: String, required: true },
    organization_name: { type: String, required: true },
    contact_email: { type: String, required: true },
    country: { type: String, default: null },
    use_case: { type: String, default: null },
    status: { type: String, required: true },
    created_at: { type: Date, required: true },
    decided_at: { type: Date, default: null },
    tenant_id: { type: String, default: null },
    rejection_reason: { type: String, default: null },
    outbox: outboxField,
  },
  { collection: 'onboarding_requests', versionKey: false, autoIndex: false },
);
// getOnboardingRequest, decideOnboardingRequest: { request_id } (status checked on the one document found);
// listOnboardingRequests without filters: { request_id < cursor } sorted { request_id: -1 }, walked backwards.
onboardingSchema.index({ request_id: 1 }, { unique: true });
// listOnboardingRequests?status=: { status, request_id < cursor } sorted { request_id: -1 }, the operator's queue.
onboardingSchema.index({ status: 1, request_id: -1 });

interface WidgetDoc extends WithOutbox {
  tenant_id: string;
  allowed_origins: string[];
  theme: { primary_color?: string; logo_url?: string };
  locale: string | null;
  updated_at: Date;
}

const widgetSchema = new Schema<WidgetDoc>(
  {
    tenant_id: { type: String, required: true },
    allowed_origins: { type: [String], required: true },
    theme: { type: Schema.Types.Mixed, default: {} },
    locale: { type: String, default: null },
    updated_at: { type: Date, required: true },
    outbox: outboxField,
  },
  { collection: 'widget_configs', versionKey: false, autoIndex: false, minimize: false },
);
// getWidgetConfig, putWidgetConfig (upsert): { tenant_id }; one configuration per tenant.
widgetSchema.index({ tenant_id: 1 }, { unique: true });

// The outbox relay and markSent, on every collection that records audited changes.
for (const schema of [tenantSchema, apiKeySchema, roleAssignmentSchema, onboardingSchema, widgetSchema]) {
  schema.index(OUTBOX_INDEX);
}

/** The schemas by collection, for the index-coverage test. */
export const IDENTITY_SCHEMAS = {
  tenants: tenantSchema,
  api_keys: apiKeySchema,
  role_assignments: roleAssignmentSchema,
  onboarding_requests: onboardingSchema,
  widget_configs: widgetSchema,
} as const;

/** Every query this adapter runs (see the methods below), for the index-coverage test. */
export const IDENTITY_QUERY_SHAPES: MongoQueryShape[] = [
  { query: 'getTenant', collection: 'tenants', equality: ['tenant_id'] },
  { query: 'findApiKeyByHash', collection: 'api_keys', equality: ['secret_hash'] },
  {
    query: 'listStagingKeysCreatedBefore (staging-key sweeper, across tenants)',
    collection: 'api_keys',
    equality: ['status'],
    sort: { created_at: 1 },
    range: ['created_at'],
  },
  {
    query: 'getApiKey / updateApiKeyStatus / touchApiKey',
    collection: 'api_keys',
    equality: ['tenant_id', 'key_id'],
    residual: ['status', 'last_used_at'],
  },
  { query: 'listApiKeys', collection: 'api_keys', equality: ['tenant_id'], sort: { key_id: -1 } },
  {
    query: 'getRoleAssignment / revokeRoleAssignment / updateRoleAssignmentRoles',
    collection: 'role_assignments',
    equality: ['tenant_id', 'assignment_id'],
    residual: ['status', 'roles', 'updated_at'],
  },
  {
    query: 'findActiveRoleAssignment',
    collection: 'role_assignments',
    equality: ['tenant_id', 'subject_id', 'status'],
  },
  {
    query: 'listRoleAssignments',
    collection: 'role_assignments',
    equality: ['tenant_id'],
    sort: { assignment_id: -1 },
  },
  {
    query: 'listRoleAssignments?subject_id=',
    collection: 'role_assignments',
    equality: ['tenant_id', 'subject_id'],
    sort: { assignment_id: -1 },
    residual: ['status'],
  },
  {
    query: 'listRoleAssignments?status=',
    collection: 'role_assignments',
    equality: ['tenant_id', 'status'],
    sort: { assignment_id: -1 },
  },
  {
    query: 'getOnboardingRequest / decideOnboardingRequest',
    collection: 'onboarding_requests',
    equality: ['request_id'],
    residual: ['status'],
  },
  {
    query: 'listOnboardingRequests',
    collection: 'onboarding_requests',
    equality: [],
    sort: { request_id: -1 },
  },
  {
    query: 'listOnboardingRequests?status=',
    collection: 'onboarding_requests',
    equality: ['status'],
    sort: { request_id: -1 },
  },
  { query: 'getWidgetConfig / putWidgetConfig', collection: 'widget_configs', equality: ['tenant_id'] },
  ...Object.keys(IDENTITY_SCHEMAS).flatMap((collection): MongoQueryShape[] => [
    { query: 'pendingEvents', collection, equality: [], range: ['outbox.id'] },
    { query: 'markSent', collection, equality: ['outbox.id'] },
  ]),
];

const iso = (d: Date) => d.toISOString();
const isoOrNull = (d: Date | null | undefined) => (d ? d.toISOString() : null);

function tenantOut(d: TenantDoc): Tenant {
  return { id: d.tenant_id, name: d.name, plan: d.plan, status: d.status, created_at: iso(d.created_at) };
}

function apiKeyRecordOut(d: ApiKeyDoc): ApiKeyRecord {
  return {
    key_id: d.key_id,
    tenant_id: d.tenant_id,
    name: d.name,
    scopes: [...d.scopes],
    status: d.status,
    created_at: iso(d.created_at),
    last_used_at: isoOrNull(d.last_used_at),
    replaces_key_id: d.replaces_key_id ?? null,
    secret_hash: d.secret_hash,
  };
}

function apiKeyOut(d: ApiKeyDoc): ApiKey {
  const { secret_hash: _hash, ...key } = apiKeyRecordOut(d);
  return key;
}

function assignmentOut(d: RoleAssignmentDoc): RoleAssignment {
  return {
    id: d.assignment_id,
    tenant_id: d.tenant_id,
    subject_id: d.subject_id,
    roles: [...d.roles],
    permissions: [...d.permissions],
    status: d.status,
    created_at: iso(d.created_at),
    updated_at: iso(d.updated_at),
  };
}

function onboardingOut(d: OnboardingDoc): OnboardingRequest {
  return {
    id: d.request_id,
    organization_name: d.organization_name,
    contact_email: d.contact_email,
    country: d.country ?? null,
    use_case: d.use_case ?? null,
    status: d.status,
    created_at: iso(d.created_at),
    decided_at: isoOrNull(d.decided_at),
    tenant_id: d.tenant_id ?? null,
    rejection_reason: d.rejection_reason ?? null,
  };
}

function widgetOut(d: WidgetDoc): WidgetConfig {
  const theme: WidgetConfig['theme'] = {};
  if (d.theme?.primary_color !== undefined) theme.primary_color = d.theme.primary_color;
  if (d.theme?.logo_url !== undefined) theme.logo_url = d.theme.logo_url;
  return {
    allowed_origins: [...d.allowed_origins],
    theme,
    locale: d.locale ?? null,
    updated_at: iso(d.updated_at),
  };
}

/** Reads never carry the outbox: it is the relay's. */
const HIDDEN = { _id: 0, outbox: 0 } as const;
/** Never read the hash back out of list/get queries. */
const WITHOUT_HASH = { _id: 0, secret_hash: 0, outbox: 0 } as const;

export class MongoIdentityStore implements IdentityStore {
  private constructor(
    private readonly connection: Connection,
    private readonly tenants: Model<TenantDoc>,
    private readonly keys: Model<ApiKeyDoc>,
    private readonly assignments: Model<RoleAssignmentDoc>,
    private readonly onboarding: Model<OnboardingDoc>,
    private readonly widgets: Model<WidgetDoc>,
  ) {}

  /** Builds the models and waits for every index, so uniqueness holds before the first request. */
  static async create(connection: Connection): Promise<MongoIdentityStore> {
    const store = new MongoIdentityStore(
      connection,
      connection.model<TenantDoc>('Tenant', tenantSchema),
      connection.model<ApiKeyDoc>('ApiKey', apiKeySchema),
      connection.model<RoleAssignmentDoc>('RoleAssignment', roleAssignmentSchema),
      connection.model<OnboardingDoc>('OnboardingRequest', onboardingSchema),
      connection.model<WidgetDoc>('WidgetConfig', widgetSchema),
    );
    await Promise.all([
      store.tenants.createIndexes(),
      store.keys.createIndexes(),
      store.assignments.createIndexes(),
      store.onboarding.createIndexes(),
      store.widgets.createIndexes(),
    ]);
    return store;
  }

  async insertTenant(tenant: Tenant, outbox?: AuditEvent[]): Promise<void> {
    try {
      await this.tenants.create({
        tenant_id: tenant.id,
        name: tenant.name,
        plan: tenant.plan,
        status: tenant.status,
        created_at: new Date(tenant.created_at),
        ...withOutbox(outbox),
      });
    } catch (err) {
      if (isDuplicateKeyError(err)) throw new DuplicateRecord('Tenant');
      throw err;
    }
  }

  async getTenant(tenantId: string): Promise<Tenant | null> {
    const d = await this.tenants.findOne({ tenant_id: tenantId }, HIDDEN).lean<TenantDoc>();
    return d ? tenantOut(d) : null;
  }

  async insertApiKey(tenantId: string, record: ApiKeyRecord, outbox?: AuditEvent[]): Promise<void> {
    try {
      await this.keys.create({
        tenant_id: tenantId,
        key_id: record.key_id,
        name: record.name,
        scopes: record.scopes,
        status: record.status,
        secret_hash: record.secret_hash,
        created_at: new Date(record.created_at),
        last_used_at: record.last_used_at ? new Date(record.last_used_at) : null,
        replaces_key_id: record.replaces_key_id,
        ...withOutbox(outbox),
      });
    } catch (err) {
      if (isDuplicateKeyError(err)) {
        const keyPattern = (err as { keyPattern?: Record<string, unknown> }).keyPattern;
        if (keyPattern && 'replaces_key_id' in keyPattern) throw new PendingSuccessorExists();
        throw new DuplicateRecord('API key');
      }
      throw err;
    }
  }

  async getApiKey(tenantId: string, keyId: string): Promise<ApiKey | null> {
    const d = await this.keys.findOne({ tenant_id: tenantId, key_id: keyId }, WITHOUT_HASH).lean<ApiKeyDoc>();
    return d ? apiKeyOut(d) : null;
  }

  async listApiKeys(tenantId: string, { limit, before }: ListOptions): Promise<ApiKey[]> {
    const filter =
      before === undefined ? { tenant_id: tenantId } : { tenant_id: tenantId, key_id: { $lt: before } };
    const docs = await this.keys
      .find(filter, WITHOUT_HASH)
      .sort({ key_id: -1 })
      .limit(limit)
      .lean<ApiKeyDoc[]>();
    return docs.map(apiKeyOut);
  }

  async updateApiKeyStatus(
    tenantId: string,
    keyId: string,
    from: readonly ApiKeyStatus[],
    to: ApiKeyStatus,
    outbox?: OutboxFor<ApiKey>,
  ): Promise<ApiKey | null> {
    if (!outbox) {
      const d = await this.keys
        .findOneAndUpdate(
          { tenant_id: tenantId, key_id: keyId, status: { $in: [...from] } },
          { $set: { status: to } },
          { new: true, projection: WITHOUT_HASH },
        )
        .lean<ApiKeyDoc>();
      return d ? apiKeyOut(d) : null;
    }
    // The events are built from the key as read, so the write is conditional on that read (status).
    return casWithOutbox(
      this.keys,
      { tenant_id: tenantId, key_id: keyId, status: { $in: [...from] } },
      WITHOUT_HASH,
      (d) => ({ guard: { status: d.status }, set: { status: to }, after: { ...d, status: to } }),
      apiKeyOut,
      outbox,
    );
  }

  async listStagingKeysCreatedBefore(createdAtOrBefore: string, limit: number): Promise<ApiKey[]> {
    const docs = await this.keys
      .find({ status: 'staging', created_at: { $lte: new Date(createdAtOrBefore) } }, WITHOUT_HASH)
      .sort({ created_at: 1 })
      .limit(limit)
      .lean<ApiKeyDoc[]>();
    return docs.map(apiKeyOut);
  }

  async touchApiKey(tenantId: string, keyId: string, at: string, minIntervalMs: number): Promise<void> {
    const now = new Date(at);
    await this.keys.updateOne(
      {
        tenant_id: tenantId,
        key_id: keyId,
        $or: [{ last_used_at: null }, { last_used_at: { $lte: new Date(now.getTime() - minIntervalMs) } }],
      },
      { $set: { last_used_at: now } },
    );
  }

  async findApiKeyByHash(secretHash: string): Promise<ApiKeyRecord | null> {
    const d = await this.keys.findOne({ secret_hash: secretHash }, HIDDEN).lean<ApiKeyDoc>();
    return d ? apiKeyRecordOut(d) : null;
  }

  async insertRoleAssignment(tenantId: string, a: RoleAssignment, outbox?: AuditEvent[]): Promise<void> {
    try {
      await this.assignments.create({
        tenant_id: tenantId,
        assignment_id: a.id,
        subject_id: a.subject_id,
        roles: a.roles,
        permissions: a.permissions,
        status: a.status,
        created_at: new Date(a.created_at),
        updated_at: new Date(a.updated_at),
        ...withOutbox(outbox),
      });
    } catch (err) {
      if (isDuplicateKeyError(err)) {
        const pattern = (err as { keyPattern?: Record<string, unknown> }).keyPattern ?? {};
        if ('subject_id' in pattern) throw new DuplicateRoleAssignment();
        throw new DuplicateRecord('Role assignment');
      }
      throw err;
    }
  }

  async getRoleAssignment(tenantId: string, id: string): Promise<RoleAssignment | null> {
    const d = await this.assignments
      .findOne({ tenant_id: tenantId, assignment_id: id }, HIDDEN)
      .lean<RoleAssignmentDoc>();
    return d ? assignmentOut(d) : null;
  }

  async findActiveRoleAssignment(tenantId: string, subjectId: string): Promise<RoleAssignment | null> {
    const d = await this.assignments
      .findOne({ tenant_id: tenantId, subject_id: subjectId, status: 'active' }, HIDDEN)
      .lean<RoleAssignmentDoc>();
    return d ? assignmentOut(d) : null;
  }

  async revokeRoleAssignment(
    tenantId: string,
    id: string,
    at: string,
    outbox?: OutboxFor<RoleAssignment>,
  ): Promise<RoleAssignment | null> {
    const set = { status: 'revoked' as const, updated_at: new Date(at) };
    return casWithOutbox(
      this.assignments,
      { tenant_id: tenantId, assignment_id: id, status: 'active' },
      HIDDEN,
      // roles and updated_at as read: a concurrent role change makes this write retry with fresh data.
      (d) => ({ guard: { roles: d.roles, updated_at: d.updated_at }, set, after: { ...d, ...set } }),
      assignmentOut,
      outbox,
    );
  }

  async listRoleAssignments(
    tenantId: string,
    { limit, before, subjectId, status }: ListOptions & { subjectId?: string; status?: RoleAssignmentStatus },
  ): Promise<RoleAssignment[]> {
    const filter: Record<string, unknown> = { tenant_id: tenantId };
    if (before !== undefined) filter.assignment_id = { $lt: before };
    if (subjectId !== undefined) filter.subject_id = subjectId;
    if (status !== undefined) filter.status = status;
    const docs = await this.assignments
      .find(filter, HIDDEN)
      .sort({ assignment_id: -1 })
      .limit(limit)
      .lean<RoleAssignmentDoc[]>();
    return docs.map(assignmentOut);
  }

  async updateRoleAssignmentRoles(
    tenantId: string,
    id: string,
    change: { roles: Role[]; permissions: string[]; at: string },
    outbox?: OutboxFor<RoleAssignment>,
  ): Promise<RoleAssignment | null> {
    const set = { roles: change.roles, permissions: change.permissions, updated_at: new Date(change.at) };
    return casWithOutbox(
      this.assignments,
      { tenant_id: tenantId, assignment_id: id, status: 'active' },
      HIDDEN,
      (d) => ({ guard: { roles: d.roles, updated_at: d.updated_at }, set, after: { ...d, ...set } }),
      assignmentOut,
      outbox,
    );
  }

  async insertOnboardingRequest(r: OnboardingRequest, outbox?: AuditEvent[]): Promise<void> {
    try {
      await this.onboarding.create({
        request_id: r.id,
        organization_name: r.organization_name,
        contact_email: r.contact_email,
        country: r.country,
        use_case: r.use_case,
        status: r.status,
        created_at: new Date(r.created_at),
        decided_at: r.decided_at ? new Date(r.decided_at) : null,
        tenant_id: r.tenant_id,
        rejection_reason: r.rejection_reason,
        ...withOutbox(outbox),
      });
    } catch (err) {
      if (isDuplicateKeyError(err)) throw new DuplicateRecord('Onboarding request');
      throw err;
    }
  }

  async getOnboardingRequest(id: string): Promise<OnboardingRequest | null> {
    const d = await this.onboarding.findOne({ request_id: id }, HIDDEN).lean<OnboardingDoc>();
    return d ? onboardingOut(d) : null;
  }

  async listOnboardingRequests({
    limit,
    before,
    status,
  }: ListOptions & { status?: OnboardingStatus }): Promise<OnboardingRequest[]> {
    const filter: Record<string, unknown> = {};
    if (before !== undefined) filter.request_id = { $lt: before };
    if (status !== undefined) filter.status = status;
    const docs = await this.onboarding
      .find(filter, HIDDEN)
      .sort({ request_id: -1 })
      .limit(limit)
      .lean<OnboardingDoc[]>();
    return docs.map(onboardingOut);
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
    const set = {
      status: decision.status,
      decided_at: new Date(decision.at),
      tenant_id: decision.tenantId ?? null,
      rejection_reason: decision.rejectionReason ?? null,
    };
    // PENDING in the filter is the compare-and-set: one decision wins, and only it stores its event.
    return casWithOutbox(
      this.onboarding,
      { request_id: id, status: 'PENDING' },
      HIDDEN,
      (d) => ({ guard: {}, set, after: { ...d, ...set } }),
      onboardingOut,
      outbox,
    );
  }

  async getWidgetConfig(tenantId: string): Promise<WidgetConfig | null> {
    const d = await this.widgets.findOne({ tenant_id: tenantId }, HIDDEN).lean<WidgetDoc>();
    return d ? widgetOut(d) : null;
  }

  async putWidgetConfig(tenantId: string, config: WidgetConfig, outbox?: AuditEvent[]): Promise<void> {
    await this.widgets.updateOne(
      { tenant_id: tenantId },
      {
        $set: {
          allowed_origins: config.allowed_origins,
          theme: config.theme,
          locale: config.locale,
          updated_at: new Date(config.updated_at ?? Date.now()),
        },
        ...pushOutbox(outbox),
      },
      { upsert: true },
    );
  }

  private get outboxModels(): Model<WithOutbox>[] {
    return [
      this.tenants,
      this.keys,
      this.assignments,
      this.onboarding,
      this.widgets,
    ] as unknown as Model<WithOutbox>[];
  }

  async pendingEvents(limit: number): Promise<AuditEvent[]> {
    const events: AuditEvent[] = [];
    for (const model of this.outboxModels) {
      const docs = await model
        .find({ 'outbox.id': { $gt: '' } }, { _id: 0, outbox: 1 })
        .limit(limit)
        .lean<{ outbox: AuditEvent[] }[]>();
      for (const doc of docs) {
        if (events.length > 0 && events.length + doc.outbox.length > limit) return events;
        events.push(...doc.outbox);
      }
    }
    return events;
  }

  async markSent(eventIds: string[]): Promise<void> {
    if (eventIds.length === 0) return;
    for (const model of this.outboxModels) {
      await model.updateMany(
        { 'outbox.id': { $in: eventIds } },
        { $pull: { outbox: { id: { $in: eventIds } } } },
      );
    }
  }

  async ping(): Promise<void> {
    const db = this.connection.db;
    if (!db) throw new Error('MongoDB not connected');
    await db.admin().ping();
  }
}

const withOutbox = (events: AuditEvent[] | undefined) =>
  events && events.length > 0 ? { outbox: events } : {};

/**
 * A conditional update whose audit events depend on the document: read it (filter), build the
 * new state and its events, then write both in one updateOne guarded by the fields read, so the
 * events always describe exactly the change that was written. A document changed in between is
 * read again; null when the filter no longer matches.
 */
async function casWithOutbox<D extends WithOutbox, T>(
  model: Model<D>,
  filter: Record<string, unknown>,
  projection: Record<string, 0 | 1>,
  change: (d: D) => { guard: Record<string, unknown>; set: Record<string, unknown>; after: D },
  out: (d: D) => T,
  outbox: OutboxFor<T> | undefined,
): Promise<T | null> {
  for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
    const d = await model.findOne(filter, projection).lean<D>();
    if (!d) return null;
    const { guard, set, after } = change(d);
    const written = out(after);
    const events = outbox?.(written, out(d));
    const result = await model.updateOne(
      { ...filter, ...guard } as never,
      { $set: set, ...pushOutbox(events) } as never,
    );
    if (result.matchedCount === 1) return written;
  }
  throw new Error('document kept changing under a conditional update; giving up');
}
