import { type AuditEvent } from '@mandate/shared/events';
import { WITHOUT_OUTBOX, queryShapesOf, type MongoQueryShape, type StoredAs } from '@mandate/shared/data';
import { DuplicateRecord } from '../common/errors';
import { CollectionStore, identitySchema, indexOutbox, iso, isoOrNull } from '../common/mongo';
import type { ListOptions } from '../common/store';
import {
  PendingSuccessorExists,
  USABLE_KEY_STATUSES,
  toApiKey,
  type ApiKey,
  type ApiKeyRecord,
} from './api-key';
import type { ApiKeyStore, KeyStatusChange, UsableKeyHash } from './api-key-store';

export type ApiKeyDoc = StoredAs<ApiKeyRecord, 'created_at' | 'last_used_at' | 'grace_ends_at'>;

export const apiKeySchema = identitySchema<ApiKeyDoc>('api_keys', {
  tenant_id: { type: String, required: true },
  key_id: { type: String, required: true },
  name: { type: String, required: true },
  scopes: { type: [String], required: true },
  status: { type: String, required: true },
  secret_hash: { type: String, required: true },
  created_at: { type: Date, required: true },
  last_used_at: { type: Date, default: null },
  replaces_key_id: { type: String, default: null },
  replaced_by_key_id: { type: String, default: null },
  grace_ends_at: { type: Date, default: null },
});
// findByHash: { secret_hash }, resolving every authenticated request; unique so one secret names one key.
apiKeySchema.index({ secret_hash: 1 }, { unique: true });
// get, setStatus, touch: { tenant_id, key_id } (status, last_used_at checked on the one document found);
// list: { tenant_id, key_id < cursor } sorted { key_id: -1 }, this index walked backwards; unique so a key
// id exists once per tenant.
apiKeySchema.index({ tenant_id: 1, key_id: 1 }, { unique: true });
// insert of a rotation's successor: partial unique so the database, not a check-then-insert, keeps at
// most one staging successor per replaced key (two concurrent rotations: one wins). Only keys that
// replace one are in it: MongoDB indexes a null replaces_key_id too, and two staging keys without a
// predecessor must not collide.
apiKeySchema.index(
  { tenant_id: 1, replaces_key_id: 1 },
  {
    unique: true,
    partialFilterExpression: { status: 'staging', replaces_key_id: { $type: 'string' } },
    name: 'one_staging_successor_per_key',
  },
);
// listStagingCreatedBefore(cutoff): the staging-key sweeper, {status: staging, created_at ≤ cutoff} oldest first;
// listUsableHashes(since): {status ∈ usable, created_at ≥ since} oldest first (the gateway's usable keys).
apiKeySchema.index({ status: 1, created_at: 1 });
// listGraceEndedBefore(at): the grace sweeper, {status: active, grace_ends_at ≤ at} soonest first
// (docs/API.md#api-key-rotation-grace); keys without a grace period sit under null, before the range.
apiKeySchema.index({ status: 1, grace_ends_at: 1 });
indexOutbox(apiKeySchema);

const shapes = queryShapesOf('api_keys', 'key_id');

/** Every query below, for the index-coverage test. */
export const API_KEY_QUERY_SHAPES: MongoQueryShape[] = [
  shapes.find('apiKeys.findByHash', ['secret_hash']),
  shapes.find('apiKeys.listStagingCreatedBefore (staging-key sweeper, across tenants)', ['status'], {
    sort: { created_at: 1 },
    range: ['created_at'],
  }),
  shapes.find('apiKeys.listUsableHashes (the gateway’s usable keys, across tenants)', ['status'], {
    sort: { created_at: 1 },
    range: ['created_at'],
  }),
  shapes.find('apiKeys.usableHashesOf (each key of the $or)', ['tenant_id', 'key_id'], {
    residual: ['status'],
  }),
  shapes.find('apiKeys.listGraceEndedBefore (rotation grace sweeper, across tenants)', ['status'], {
    sort: { grace_ends_at: 1 },
    range: ['grace_ends_at'],
  }),
  shapes.find('apiKeys.get / setStatus / touch / touchMany', ['tenant_id', 'key_id'], {
    residual: ['status', 'last_used_at'],
  }),
  shapes.page('apiKeys.list', ['tenant_id']),
];

/** Never read the hash back out of list/get queries. */
const WITHOUT_HASH = { ...WITHOUT_OUTBOX, secret_hash: 0 } as const;

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
    replaced_by_key_id: d.replaced_by_key_id ?? null,
    grace_ends_at: d.grace_ends_at ? iso(d.grace_ends_at) : null,
    secret_hash: d.secret_hash,
  };
}

const USABLE_HASH_FIELDS = {
  _id: 0,
  tenant_id: 1,
  key_id: 1,
  status: 1,
  created_at: 1,
  grace_ends_at: 1,
  secret_hash: 1,
} as const;
const usableHashOut = (d: ApiKeyDoc): UsableKeyHash => ({
  tenant_id: d.tenant_id,
  key_id: d.key_id,
  status: d.status,
  created_at: iso(d.created_at),
  grace_ends_at: d.grace_ends_at ? iso(d.grace_ends_at) : null,
  secret_hash: d.secret_hash,
});

export class MongoApiKeyStore extends CollectionStore<ApiKeyDoc, ApiKey> implements ApiKeyStore {
  async insert(tenantId: string, record: ApiKeyRecord, outbox?: AuditEvent[]): Promise<void> {
    const doc = {
      tenant_id: tenantId,
      key_id: record.key_id,
      name: record.name,
      scopes: record.scopes,
      status: record.status,
      secret_hash: record.secret_hash,
      created_at: new Date(record.created_at),
      last_used_at: record.last_used_at ? new Date(record.last_used_at) : null,
      replaces_key_id: record.replaces_key_id,
      replaced_by_key_id: record.replaced_by_key_id,
      grace_ends_at: record.grace_ends_at ? new Date(record.grace_ends_at) : null,
    };
    await this.insertWithEvents(doc, outbox, (keyPattern) =>
      'replaces_key_id' in keyPattern ? new PendingSuccessorExists() : new DuplicateRecord('API key'),
    );
  }

  get(tenantId: string, keyId: string): Promise<ApiKey | null> {
    return this.findOneOut({ tenant_id: tenantId, key_id: keyId }, WITHOUT_HASH);
  }

  list(tenantId: string, { limit, before }: ListOptions): Promise<ApiKey[]> {
    return this.pageOut({ filter: { tenant_id: tenantId }, key: 'key_id', before, limit }, WITHOUT_HASH);
  }

  setStatus(
    tenantId: string,
    keyId: string,
    { from, to, set }: KeyStatusChange,
    outbox?: AuditEvent[],
  ): Promise<ApiKey | null> {
    const links = {
      ...(set?.replaced_by_key_id ? { replaced_by_key_id: set.replaced_by_key_id } : {}),
      ...(set?.grace_ends_at ? { grace_ends_at: new Date(set.grace_ends_at) } : {}),
    };
    // `from` in the filter is the guard: the change and its events land together, or not at all.
    return this.updateOut(
      { tenant_id: tenantId, key_id: keyId, status: from },
      { status: to, ...links },
      outbox,
      WITHOUT_HASH,
    );
  }

  async listStagingCreatedBefore(createdAtOrBefore: string, limit: number): Promise<ApiKey[]> {
    const docs = await this.model
      .find({ status: 'staging', created_at: { $lte: new Date(createdAtOrBefore) } }, WITHOUT_HASH)
      .sort({ created_at: 1 })
      .limit(limit)
      .lean<ApiKeyDoc[]>();
    return docs.map((d) => this.out(d));
  }

  async listGraceEndedBefore(at: string, limit: number): Promise<ApiKey[]> {
    const docs = await this.model
      .find({ status: 'active', grace_ends_at: { $lte: new Date(at) } }, WITHOUT_HASH)
      .sort({ grace_ends_at: 1 })
      .limit(limit)
      .lean<ApiKeyDoc[]>();
    return docs.map((d) => this.out(d));
  }

  async touch(tenantId: string, keyId: string, at: string, minIntervalMs: number): Promise<void> {
    const now = new Date(at);
    await this.model.updateOne(
      {
        tenant_id: tenantId,
        key_id: keyId,
        $or: [{ last_used_at: null }, { last_used_at: { $lte: new Date(now.getTime() - minIntervalMs) } }],
      },
      { $set: { last_used_at: now } },
    );
  }

  async touchMany(
    keys: { tenant_id: string; key_id: string }[],
    at: string,
    minIntervalMs: number,
  ): Promise<void> {
    if (keys.length === 0) return;
    const now = new Date(at);
    const stale = [
      { last_used_at: null },
      { last_used_at: { $lte: new Date(now.getTime() - minIntervalMs) } },
    ];
    // One command for all of them, each the same conditional update as touch.
    await this.model.bulkWrite(
      keys.map((k) => ({
        updateOne: {
          filter: { tenant_id: k.tenant_id, key_id: k.key_id, $or: stale },
          update: { $set: { last_used_at: now } },
        },
      })),
      { ordered: false },
    );
  }

  async listUsableHashes(createdSince: string | undefined, limit: number): Promise<UsableKeyHash[]> {
    const docs = await this.model
      .find(
        {
          status: { $in: [...USABLE_KEY_STATUSES] },
          ...(createdSince !== undefined ? { created_at: { $gte: new Date(createdSince) } } : {}),
        },
        USABLE_HASH_FIELDS,
      )
      .sort({ created_at: 1 })
      .limit(limit)
      .lean<ApiKeyDoc[]>();
    return docs.map(usableHashOut);
  }

  async usableHashesOf(keys: { tenant_id: string; key_id: string }[]): Promise<UsableKeyHash[]> {
    if (keys.length === 0) return [];
    const docs = await this.model
      .find(
        {
          $or: keys.map((k) => ({ tenant_id: k.tenant_id, key_id: k.key_id })),
          status: { $in: [...USABLE_KEY_STATUSES] },
        },
        USABLE_HASH_FIELDS,
      )
      .lean<ApiKeyDoc[]>();
    return docs.map(usableHashOut);
  }

  async findByHash(secretHash: string): Promise<ApiKeyRecord | null> {
    const d = await this.model.findOne({ secret_hash: secretHash }, WITHOUT_OUTBOX).lean<ApiKeyDoc>();
    return d ? apiKeyRecordOut(d) : null;
  }

  protected out(d: ApiKeyDoc): ApiKey {
    return toApiKey(apiKeyRecordOut(d));
  }
}
