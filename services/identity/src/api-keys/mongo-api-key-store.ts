import { pageBefore, queryShapesOf, type AuditEvent, type MongoQueryShape } from '@mandate/shared';
import type { Model } from 'mongoose';
import { DuplicateRecord } from '../common/errors';
import {
  HIDDEN,
  identitySchema,
  indexOutbox,
  insertUnique,
  iso,
  isoOrNull,
  pushOutbox,
  withOutbox,
  type WithOutbox,
} from '../common/mongo';
import type { ListOptions } from '../common/store';
import {
  PendingSuccessorExists,
  toApiKey,
  type ApiKey,
  type ApiKeyRecord,
  type ApiKeyScope,
  type ApiKeyStatus,
} from './api-key';
import type { ApiKeyStore } from './api-key-store';

export interface ApiKeyDoc extends WithOutbox {
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
// listStagingCreatedBefore(cutoff): the staging-key sweeper, {status: staging, created_at ≤ cutoff} oldest first.
apiKeySchema.index({ status: 1, created_at: 1 });
indexOutbox(apiKeySchema);

const shapes = queryShapesOf('api_keys', 'key_id');

/** Every query below, for the index-coverage test. */
export const API_KEY_QUERY_SHAPES: MongoQueryShape[] = [
  shapes.find('apiKeys.findByHash', ['secret_hash']),
  shapes.find('apiKeys.listStagingCreatedBefore (staging-key sweeper, across tenants)', ['status'], {
    sort: { created_at: 1 },
    range: ['created_at'],
  }),
  shapes.find('apiKeys.get / setStatus / touch', ['tenant_id', 'key_id'], {
    residual: ['status', 'last_used_at'],
  }),
  shapes.page('apiKeys.list', ['tenant_id']),
];

/** Never read the hash back out of list/get queries. */
const WITHOUT_HASH = { ...HIDDEN, secret_hash: 0 } as const;

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

const apiKeyOut = (d: ApiKeyDoc): ApiKey => toApiKey(apiKeyRecordOut(d));

export class MongoApiKeyStore implements ApiKeyStore {
  constructor(private readonly keys: Model<ApiKeyDoc>) {}

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
      ...withOutbox(outbox),
    };
    await insertUnique(this.keys, doc, (keyPattern) =>
      'replaces_key_id' in keyPattern ? new PendingSuccessorExists() : new DuplicateRecord('API key'),
    );
  }

  async get(tenantId: string, keyId: string): Promise<ApiKey | null> {
    const d = await this.keys.findOne({ tenant_id: tenantId, key_id: keyId }, WITHOUT_HASH).lean<ApiKeyDoc>();
    return d ? apiKeyOut(d) : null;
  }

  async list(tenantId: string, { limit, before }: ListOptions): Promise<ApiKey[]> {
    const docs = await pageBefore(this.keys, {
      filter: { tenant_id: tenantId },
      key: 'key_id',
      before,
      limit,
      projection: WITHOUT_HASH,
    });
    return docs.map(apiKeyOut);
  }

  async setStatus(
    tenantId: string,
    keyId: string,
    { from, to }: { from: ApiKeyStatus; to: ApiKeyStatus },
    outbox?: AuditEvent[],
  ): Promise<ApiKey | null> {
    // `from` in the filter is the guard: the change and its events land together, or not at all.
    const d = await this.keys
      .findOneAndUpdate(
        { tenant_id: tenantId, key_id: keyId, status: from },
        { $set: { status: to }, ...pushOutbox(outbox) },
        { new: true, projection: WITHOUT_HASH },
      )
      .lean<ApiKeyDoc>();
    return d ? apiKeyOut(d) : null;
  }

  async listStagingCreatedBefore(createdAtOrBefore: string, limit: number): Promise<ApiKey[]> {
    const docs = await this.keys
      .find({ status: 'staging', created_at: { $lte: new Date(createdAtOrBefore) } }, WITHOUT_HASH)
      .sort({ created_at: 1 })
      .limit(limit)
      .lean<ApiKeyDoc[]>();
    return docs.map(apiKeyOut);
  }

  async touch(tenantId: string, keyId: string, at: string, minIntervalMs: number): Promise<void> {
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

  async findByHash(secretHash: string): Promise<ApiKeyRecord | null> {
    const d = await this.keys.findOne({ secret_hash: secretHash }, HIDDEN).lean<ApiKeyDoc>();
    return d ? apiKeyRecordOut(d) : null;
  }
}
