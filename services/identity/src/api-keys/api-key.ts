import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { AppError } from '@mandate/shared/core';

import {
  USABLE_KEY_STATUSES,
  type ApiKeyScope,
  type ApiKeyStatus,
  type UsableKeyStatus,
} from '../contract/wire';

/** Whether a key of this status authenticates. */
export const isUsableStatus = (status: ApiKeyStatus): status is UsableKeyStatus =>
  (USABLE_KEY_STATUSES as readonly ApiKeyStatus[]).includes(status);
// Wire vocabulary: the contract's (a staging key's secret authenticates at once, docs/API.md, "API keys").
export {
  MAX_ROTATION_GRACE_SECONDS,
  API_KEY_NAME_MAX,
  API_KEY_SCOPES,
  API_KEY_STATUSES,
  USABLE_KEY_STATUSES,
  type ApiKeyScope,
  type ApiKeyStatus,
  type UsableKeyStatus,
} from '../contract/wire';

/** What every read returns: never the secret, never its hash. */
export interface ApiKey {
  key_id: string;
  tenant_id: string;
  name: string;
  scopes: ApiKeyScope[];
  status: ApiKeyStatus;
  created_at: string;
  last_used_at: string | null;
  /** The key this one replaces (set by rotation); activation revokes that key. */
  replaces_key_id: string | null;
  /** The key that replaced this one (set when its successor is activated): the link back. */
  replaced_by_key_id: string | null;
  /**
   * Set on an active key when its successor was activated with a grace period: the key keeps
   * working until then and is revoked at that moment (docs/API.md#api-key-rotation-grace).
   */
  grace_ends_at: string | null;
}

/** The stored form: the key plus the SHA-256 of its secret (hex). */
export interface ApiKeyRecord extends ApiKey {
  secret_hash: string;
}

/**
 * Secrets: a recognisable prefix (so leaked keys are easy to grep for and to tell from other
 * tokens) and 43 base62 characters drawn from the CSPRNG: 43·log2(62) ≈ 256 bits.
 */
export const SECRET_PREFIX = 'msk_';
const SECRET_LENGTH = 43;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const SECRET_PATTERN = /^msk_[0-9A-Za-z]{43}$/;

export function generateSecret(): string {
  let out = '';
  while (out.length < SECRET_LENGTH) {
    for (const byte of randomBytes(64)) {
      // Rejection sampling: bytes ≥ 248 (= 4·62) would bias the modulo.
      if (byte >= 248) continue;
      out += BASE62[byte % 62];
      if (out.length === SECRET_LENGTH) break;
    }
  }
  return SECRET_PREFIX + out;
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** Constant-time comparison of two hex SHA-256 digests. */
export function hashesEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a, 'hex');
  const bb = Buffer.from(b, 'hex');
  return ab.length === 32 && bb.length === 32 && timingSafeEqual(ab, bb);
}

/** Strips the hash from a stored record. */
export function toApiKey(record: ApiKeyRecord): ApiKey {
  const { secret_hash: _hash, ...key } = record;
  return key;
}

/** How long a staging key (a rotation's successor) may wait for activation by default: docs/API.md, "API keys". */
export const DEFAULT_STAGING_KEY_TTL_HOURS = 168;
/** The reason API_KEY_REVOKED carries when a staging key was not activated in time. */
export const STAGING_EXPIRED_REASON = 'staging_expired';

/** Whether a staging key has outlived its activation window at `now`. */
export function isStagingExpired(
  key: Pick<ApiKey, 'status' | 'created_at'>,
  now: Date,
  ttlMs: number,
): boolean {
  return key.status === 'staging' && Date.parse(key.created_at) + ttlMs <= now.getTime();
}

/** How long a replaced key keeps working after its successor's activation by default: 24 h (docs/API.md#api-key-rotation-grace). */
export const DEFAULT_ROTATION_GRACE_SECONDS = 86_400;
/** The reason API_KEY_REVOKED carries when a replaced key's grace period ended. */
export const GRACE_ENDED_REASON = 'rotation_grace_ended';

/** Whether a replaced key's grace period is over at `now`. */
export function isGraceOver(key: Pick<ApiKey, 'status' | 'grace_ends_at'>, now: Date): boolean {
  return key.status === 'active' && !!key.grace_ends_at && Date.parse(key.grace_ends_at) <= now.getTime();
}

/** How often last_used_at is written at most: a resolve per request must not mean a write per request. */
export const LAST_USED_RESOLUTION_MS = 60_000;

export class ApiKeyNotFound extends AppError {
  constructor() {
    super('NOT_FOUND', 'API key not found');
  }
}

/** A lifecycle transition the key's current status does not allow. */
export class KeyTransitionNotAllowed extends AppError {
  constructor(message: string) {
    super('CONFLICT', message);
  }
}

/** A rotation while the key's previous successor is still staging (docs/API.md, "API keys": at most one). */
export class PendingSuccessorExists extends AppError {
  constructor() {
    super('CONFLICT', 'API key already has a staging successor; activate or revoke it first');
  }
}
