import type { AuditEvent } from '@mandate/shared/events';
import type { ListOptions } from '../common/store';
import type { ApiKey, ApiKeyRecord, ApiKeyStatus } from './api-key';

/** A status change as the caller decided it: to `to`, only while the key is still `from`. */
export interface KeyStatusChange {
  from: ApiKeyStatus;
  to: ApiKeyStatus;
  /** The rotation links written with the status (docs/API.md#api-key-rotation-grace). */
  set?: { grace_ends_at?: string; replaced_by_key_id?: string };
}

/** A usable key and its secret's hash: what the gateway's list of usable keys is built from. */
export interface UsableKeyHash {
  tenant_id: string;
  key_id: string;
  status: ApiKeyStatus;
  created_at: string;
  grace_ends_at: string | null;
  secret_hash: string;
}

/**
 * API keys, tenant first; the cross-tenant reads are findByHash (how a request's tenant is found)
 * and listStagingCreatedBefore (the sweeper). Reads never return the hash, except findByHash.
 */
export interface ApiKeyStore {
  /**
   * Stores the key and its events in one insert. Refuses a duplicate key id or secret hash with
   * DuplicateRecord, and a second staging key replacing the same key with PendingSuccessorExists
   * (decided by the write itself, so two concurrent rotations cannot both succeed).
   */
  insert(tenantId: string, record: ApiKeyRecord, outbox?: AuditEvent[]): Promise<void>;
  get(tenantId: string, keyId: string): Promise<ApiKey | null>;
  /** Newest first. */
  list(tenantId: string, options: ListOptions): Promise<ApiKey[]>;
  /**
   * The guarded write of every status change: sets `to`, with its events, only while the status
   * is still `from` (as the caller read it and decided on). The key as written, or null when it is
   * absent or its status moved on meanwhile.
   */
  setStatus(
    tenantId: string,
    keyId: string,
    change: KeyStatusChange,
    outbox?: AuditEvent[],
  ): Promise<ApiKey | null>;
  /** Staging keys created at or before `createdAtOrBefore`, oldest first, across tenants. */
  listStagingCreatedBefore(createdAtOrBefore: string, limit: number): Promise<ApiKey[]>;
  /** Active keys whose rotation grace period ended at or before `at`, soonest first, across tenants. */
  listGraceEndedBefore(at: string, limit: number): Promise<ApiKey[]>;
  /** Records a use, unless one was recorded less than minIntervalMs before `at`. */
  touch(tenantId: string, keyId: string, at: string, minIntervalMs: number): Promise<void>;
  /** touch for many keys in one write (the gateways' report of the keys they served). */
  touchMany(keys: { tenant_id: string; key_id: string }[], at: string, minIntervalMs: number): Promise<void>;
  /** Usable (active or staging) keys created at or after `createdSince` (every one without it), oldest first, across tenants. */
  listUsableHashes(createdSince: string | undefined, limit: number): Promise<UsableKeyHash[]>;
  /** Those of these keys that are usable (active or staging). */
  usableHashesOf(keys: { tenant_id: string; key_id: string }[]): Promise<UsableKeyHash[]>;
  /** Resolves a presented secret's hash to its key. */
  findByHash(secretHash: string): Promise<ApiKeyRecord | null>;
}
