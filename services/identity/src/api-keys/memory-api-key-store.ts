import { SortedById, takeMatching } from '@mandate/shared/core';
import { type AuditEvent, type MemoryOutbox } from '@mandate/shared/events';
import { DuplicateRecord } from '../common/errors';
import type { ListOptions } from '../common/store';
import { PendingSuccessorExists, isUsableStatus, toApiKey, type ApiKey, type ApiKeyRecord } from './api-key';
import type { ApiKeyStore, KeyStatusChange, UsableKeyHash } from './api-key-store';

const usableHashOf = (r: ApiKeyRecord): UsableKeyHash => ({
  tenant_id: r.tenant_id,
  key_id: r.key_id,
  status: r.status,
  created_at: r.created_at,
  grace_ends_at: r.grace_ends_at,
  secret_hash: r.secret_hash,
});

/** Maps keyed the way the Mongo unique indexes are, so the same writes are refused. */
export class MemoryApiKeyStore implements ApiKeyStore {
  /** tenant_id → key_id → record */
  private readonly keys = new Map<string, Map<string, ApiKeyRecord>>();
  /** tenant_id → key ids, sorted */
  private readonly keyIds = new Map<string, SortedById<string>>();
  /** secret_hash → {tenant_id, key_id}: the unique hash index. */
  private readonly keysByHash = new Map<string, { tenantId: string; keyId: string }>();

  constructor(private readonly outbox: MemoryOutbox) {}

  private tenantKeys(tenantId: string): Map<string, ApiKeyRecord> {
    let m = this.keys.get(tenantId);
    if (!m) this.keys.set(tenantId, (m = new Map()));
    return m;
  }

  async insert(tenantId: string, record: ApiKeyRecord, outbox?: AuditEvent[]): Promise<void> {
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
    SortedById.idsUnder(this.keyIds, tenantId).insert(record.key_id);
    this.outbox.add(`api_key:${tenantId}:${record.key_id}`, outbox);
  }

  async get(tenantId: string, keyId: string): Promise<ApiKey | null> {
    const r = this.keys.get(tenantId)?.get(keyId);
    return r ? toApiKey(structuredClone(r)) : null;
  }

  async list(tenantId: string, { limit, before }: ListOptions): Promise<ApiKey[]> {
    const keys = this.keys.get(tenantId);
    const ids = this.keyIds.get(tenantId);
    if (!keys || !ids) return [];
    return takeMatching(ids.newestFirst(before), () => true, limit).map((id) =>
      toApiKey(structuredClone(keys.get(id)!)),
    );
  }

  async setStatus(
    tenantId: string,
    keyId: string,
    { from, to, set }: KeyStatusChange,
    outbox?: AuditEvent[],
  ): Promise<ApiKey | null> {
    const r = this.keys.get(tenantId)?.get(keyId);
    if (!r || r.status !== from) return null;
    r.status = to;
    if (set) Object.assign(r, set);
    this.outbox.add(`api_key:${tenantId}:${keyId}`, outbox);
    return toApiKey(structuredClone(r));
  }

  async listUsableHashes(createdSince: string | undefined, limit: number): Promise<UsableKeyHash[]> {
    const since = createdSince === undefined ? -Infinity : Date.parse(createdSince);
    return [...this.keys.values()]
      .flatMap((m) => [...m.values()])
      .filter((k) => isUsableStatus(k.status) && Date.parse(k.created_at) >= since)
      .sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at))
      .slice(0, limit)
      .map(usableHashOf);
  }

  async usableHashesOf(keys: { tenant_id: string; key_id: string }[]): Promise<UsableKeyHash[]> {
    return keys
      .map((k) => this.keys.get(k.tenant_id)?.get(k.key_id))
      .filter((r): r is ApiKeyRecord => r !== undefined && isUsableStatus(r.status))
      .map(usableHashOf);
  }

  async listStagingCreatedBefore(createdAtOrBefore: string, limit: number): Promise<ApiKey[]> {
    const cutoff = Date.parse(createdAtOrBefore);
    return [...this.keys.values()]
      .flatMap((m) => [...m.values()])
      .filter((k) => k.status === 'staging' && Date.parse(k.created_at) <= cutoff)
      .sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0))
      .slice(0, limit)
      .map((r) => toApiKey(structuredClone(r)));
  }

  async listGraceEndedBefore(at: string, limit: number): Promise<ApiKey[]> {
    const cutoff = Date.parse(at);
    return [...this.keys.values()]
      .flatMap((m) => [...m.values()])
      .filter((k) => k.status === 'active' && !!k.grace_ends_at && Date.parse(k.grace_ends_at) <= cutoff)
      .sort((a, b) =>
        a.grace_ends_at! < b.grace_ends_at! ? -1 : a.grace_ends_at! > b.grace_ends_at! ? 1 : 0,
      )
      .slice(0, limit)
      .map((r) => toApiKey(structuredClone(r)));
  }

  async touch(tenantId: string, keyId: string, at: string, minIntervalMs: number): Promise<void> {
    const r = this.keys.get(tenantId)?.get(keyId);
    if (!r) return;
    if (r.last_used_at === null || Date.parse(r.last_used_at) <= Date.parse(at) - minIntervalMs)
      r.last_used_at = at;
  }

  async touchMany(
    keys: { tenant_id: string; key_id: string }[],
    at: string,
    minIntervalMs: number,
  ): Promise<void> {
    for (const k of keys) await this.touch(k.tenant_id, k.key_id, at, minIntervalMs);
  }

  async findByHash(secretHash: string): Promise<ApiKeyRecord | null> {
    const ref = this.keysByHash.get(secretHash);
    const r = ref && this.keys.get(ref.tenantId)?.get(ref.keyId);
    return r ? structuredClone(r) : null;
  }
}
