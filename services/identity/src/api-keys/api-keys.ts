import { foundOr, newId, type CallerContext } from '@mandate/shared/core';
import { type AuditEvent, type EventData } from '@mandate/shared/events';
import { type Page } from '@mandate/shared/contract';
import { readPage } from '../common/store';
import { MAX_WRITE_ATTEMPTS, nowIso, recordedEvent, relay, type IdentityDeps } from '../common/deps';
import { ConcurrentModification } from '../common/errors';
import type { Plan } from '../tenants/tenant';
import { KEY_HASH_PREFIX_CHARS, USABLE_KEYS_PAGE_MAX, type UsableKey } from '../contract';
import type { UsableKeyHash } from './api-key-store';
import {
  ApiKeyNotFound,
  DEFAULT_ROTATION_GRACE_SECONDS,
  DEFAULT_STAGING_KEY_TTL_HOURS,
  GRACE_ENDED_REASON,
  isGraceOver,
  KeyTransitionNotAllowed,
  LAST_USED_RESOLUTION_MS,
  PendingSuccessorExists,
  SECRET_PATTERN,
  STAGING_EXPIRED_REASON,
  isUsableStatus,
  generateSecret,
  hashSecret,
  hashesEqual,
  isStagingExpired,
  toApiKey,
  type ApiKey,
  type ApiKeyRecord,
  type ApiKeyScope,
  type ApiKeyStatus,
  type UsableKeyStatus,
} from './api-key';

/** A key together with its secret: exists only in the response to a creation or a rotation. */
export interface IssuedKey {
  key: ApiKey;
  secret: string;
}

export interface ResolvedKey {
  key: ApiKey & { status: UsableKeyStatus };
  plan: Plan;
  /** A staging key's end of its activation window (ISO): a cached answer is not used past it. */
  usableUntil?: string;
}

/** A status change as the domain decided it, with what its event records beyond the key. */
type KeyEventType = 'API_KEY_CREATED' | 'API_KEY_ROTATED' | 'API_KEY_ACTIVATED' | 'API_KEY_REVOKED';

interface KeyChange {
  to: ApiKeyStatus;
  /** The event it records; absent for a change the successor's event already tells (a grace period). */
  type?: KeyEventType;
  data?: Omit<EventData<'API_KEY_ACTIVATED'>, 'key_id' | 'name' | 'scopes' | 'status' | 'replaces_key_id'>;
  /** The rotation links written with the status. */
  set?: { grace_ends_at?: string; replaced_by_key_id?: string };
}

const stagingTtlMs = (deps: IdentityDeps) =>
  deps.stagingKeyTtlMs ?? DEFAULT_STAGING_KEY_TTL_HOURS * 3_600_000;

/** The event of a key's change: everything a reader may see of the key, never the secret or its hash. */
function keyEvent(
  deps: IdentityDeps,
  key: ApiKey,
  change: Omit<KeyChange, 'to'> & { type: KeyEventType },
  caller?: CallerContext,
): AuditEvent {
  const data = {
    key_id: key.key_id,
    name: key.name,
    scopes: key.scopes,
    status: key.status,
    replaces_key_id: key.replaces_key_id,
    ...(change.set ?? {}),
    ...change.data,
  };
  return recordedEvent(
    deps,
    { type: change.type, tenantId: key.tenant_id, resource: { type: 'api_key', id: key.key_id }, data },
    caller,
  );
}

/** Inserts a new key together with its creation (or rotation) event. */
async function issueKey(
  deps: IdentityDeps,
  tenantId: string,
  input: { name: string; scopes: ApiKeyScope[]; status?: 'active' | 'staging'; replacesKeyId?: string },
  type: 'API_KEY_CREATED' | 'API_KEY_ROTATED',
  caller?: CallerContext,
): Promise<IssuedKey> {
  const secret = generateSecret();
  const record: ApiKeyRecord = {
    key_id: newId('key'),
    tenant_id: tenantId,
    name: input.name,
    scopes: input.scopes,
    status: input.status ?? 'active',
    created_at: nowIso(deps),
    last_used_at: null,
    replaces_key_id: input.replacesKeyId ?? null,
    replaced_by_key_id: null,
    grace_ends_at: null,
    secret_hash: hashSecret(secret),
  };
  const key = toApiKey(record);
  const events = [keyEvent(deps, key, { type }, caller)];
  await deps.store.apiKeys.insert(tenantId, record, events);
  await relay(deps, events);
  return { key, secret };
}

/**
 * Writes `change` to the key as it was read, with its event, guarded by the status read: null
 * when another write changed the status first (nothing is stored then).
 */
async function writeStatus(
  deps: IdentityDeps,
  key: ApiKey,
  change: KeyChange,
  caller?: CallerContext,
): Promise<ApiKey | null> {
  const { type } = change;
  const events = type ? [keyEvent(deps, { ...key, status: change.to }, { ...change, type }, caller)] : [];
  const written = await deps.store.apiKeys.setStatus(
    key.tenant_id,
    key.key_id,
    { from: key.status, to: change.to, ...(change.set ? { set: change.set } : {}) },
    events,
  );
  if (written) await relay(deps, events);
  return written;
}

/**
 * Read → decide → guarded write, deciding again on a fresh read when another write got there
 * first (statuses only move forward, so this settles within a round or two). `decide` throws to
 * refuse, or answers null when there is nothing to do.
 */
async function changeStatus(
  deps: IdentityDeps,
  tenantId: string,
  keyId: string,
  caller: CallerContext | undefined,
  decide: (key: ApiKey | null) => KeyChange | null,
): Promise<ApiKey | null> {
  for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
    const key = await deps.store.apiKeys.get(tenantId, keyId);
    const change = decide(key);
    if (!key || !change) return null;
    const written = await writeStatus(deps, key, change, caller);
    if (written) return written;
  }
  throw new ConcurrentModification('API key');
}

export async function createApiKey(
  deps: IdentityDeps,
  tenantId: string,
  input: { name: string; scopes: ApiKeyScope[] },
  caller?: CallerContext,
): Promise<IssuedKey> {
  return issueKey(deps, tenantId, input, 'API_KEY_CREATED', caller);
}

export function listApiKeys(
  deps: IdentityDeps,
  tenantId: string,
  options: { limit: number; after?: string },
): Promise<Page<ApiKey>> {
  return readPage(
    options,
    (window) => deps.store.apiKeys.list(tenantId, window),
    (k) => k.key_id,
  );
}

export function getApiKey(deps: IdentityDeps, tenantId: string, keyId: string): Promise<ApiKey> {
  return foundOr(deps.store.apiKeys.get(tenantId, keyId), () => new ApiKeyNotFound());
}

/**
 * Issues a staging key with the old key's name and scopes, usable at once, linked to the old
 * key; the old key stays active until the new one is activated. Only an active key rotates,
 * and only while it has no staging successor (the insert refuses a second one: 409).
 */
export async function rotateApiKey(
  deps: IdentityDeps,
  tenantId: string,
  keyId: string,
  caller?: CallerContext,
): Promise<IssuedKey> {
  const old = await getApiKey(deps, tenantId, keyId);
  if (old.status === 'revoked') throw new KeyTransitionNotAllowed('API key is revoked');
  if (old.status !== 'active') throw new KeyTransitionNotAllowed('API key is not active');
  if (old.replaced_by_key_id)
    throw new KeyTransitionNotAllowed('API key was replaced: it is in its rotation grace period');
  const rotate = () =>
    issueKey(
      deps,
      tenantId,
      { name: old.name, scopes: old.scopes, status: 'staging', replacesKeyId: old.key_id },
      'API_KEY_ROTATED',
      caller,
    );
  let issued: IssuedKey;
  try {
    issued = await rotate();
  } catch (err) {
    if (!(err instanceof PendingSuccessorExists)) throw err;
    // The pending successor may be past its window but not yet swept: revoke what is due, then
    // try once more; a successor still in its window keeps refusing (409).
    if ((await expireStagingKeys(deps)) === 0) throw err;
    issued = await rotate();
  }
  await refuseSuccessorOfRevokedKey(deps, tenantId, keyId, issued.key, caller);
  return issued;
}

/**
 * A revocation that completed between the rotation's read and its insert (two documents, no
 * transaction) would leave a usable successor of a revoked key. Read the key again after the
 * insert: still active, the rotation stands (a revocation after this read comes after the
 * rotation, as one called after the other); no longer active, the successor is revoked before
 * its secret is ever shown, and the rotation is refused as if it had come second.
 */
async function refuseSuccessorOfRevokedKey(
  deps: IdentityDeps,
  tenantId: string,
  keyId: string,
  successor: ApiKey,
  caller?: CallerContext,
): Promise<void> {
  const old = await deps.store.apiKeys.get(tenantId, keyId);
  if (old?.status === 'active') return;
  await writeStatus(
    deps,
    successor,
    { to: 'revoked', type: 'API_KEY_REVOKED', data: { reason: REPLACED_KEY_REVOKED_REASON } },
    caller,
  );
  throw new KeyTransitionNotAllowed('API key is revoked');
}

/** Why a rotation's successor was revoked at once: its key was revoked while it was being issued. */
const REPLACED_KEY_REVOKED_REASON = 'replaced_key_revoked';

/**
 * staging → active, then the key it replaces → revoked (activating first keeps a usable key at every
 * moment). With a grace period (`graceSeconds` > 0, by default the deployment's, 24 h) the replaced
 * key is not revoked now: it stays active with `grace_ends_at` set, and is revoked when that moment
 * passes (docs/API.md#api-key-rotation-grace). Either way it is linked to its successor.
 */
export async function activateApiKey(
  deps: IdentityDeps,
  tenantId: string,
  keyId: string,
  caller?: CallerContext,
  graceSeconds: number = deps.rotationGraceSeconds ?? DEFAULT_ROTATION_GRACE_SECONDS,
): Promise<ApiKey> {
  const current = await getApiKey(deps, tenantId, keyId);
  if (isStagingExpired(current, deps.clock.now(), stagingTtlMs(deps))) {
    await expireStagingKey(deps, current, caller);
    throw new KeyTransitionNotAllowed('API key is not staging: its activation window expired');
  }
  if (current.status !== 'staging') throw new KeyTransitionNotAllowed('API key is not staging');
  const graceEndsAt = new Date(deps.clock.now().getTime() + graceSeconds * 1000).toISOString();
  // The activation's event tells the grace given to the key it replaces (that key's change has none).
  const grace = current.replaces_key_id
    ? {
        grace_seconds: graceSeconds,
        ...(graceSeconds > 0 ? { replaced_key_grace_ends_at: graceEndsAt } : {}),
      }
    : {};
  // A key leaves staging once and never returns: losing this write means it is no longer staging.
  const key = await writeStatus(
    deps,
    current,
    { to: 'active', type: 'API_KEY_ACTIVATED', data: grace },
    caller,
  );
  if (!key) throw new KeyTransitionNotAllowed('API key is not staging');
  const replacedKeyId = key.replaces_key_id;
  if (replacedKeyId) {
    const replacedBy = { replaced_by_key_id: key.key_id };
    // Already revoked by hand meanwhile: nothing left to do, nothing to report.
    await changeStatus(deps, tenantId, replacedKeyId, caller, (replaced) => {
      if (!replaced || !isUsableStatus(replaced.status)) return null;
      if (graceSeconds > 0 && replaced.status === 'active')
        return { to: 'active', set: { ...replacedBy, grace_ends_at: graceEndsAt } };
      return { to: 'revoked', type: 'API_KEY_REVOKED', data: replacedBy, set: replacedBy };
    });
  }
  return key;
}

/**
 * active → revoked for a replaced key whose grace period is over, with API_KEY_REVOKED (reason
 * rotation_grace_ended); guarded by the status like every change, so one caller wins.
 */
async function endGrace(deps: IdentityDeps, key: ApiKey, caller?: CallerContext): Promise<boolean> {
  const change: KeyChange = {
    to: 'revoked',
    type: 'API_KEY_REVOKED',
    data: { reason: GRACE_ENDED_REASON, replaced_by_key_id: key.replaced_by_key_id },
  };
  return (await writeStatus(deps, key, change, caller)) !== null;
}

/** The sweeper's pass over replaced keys: revokes every one whose grace period is over; how many this call revoked. */
export async function endRotationGraces(deps: IdentityDeps, batchSize = 100): Promise<number> {
  let ended = 0;
  for (;;) {
    const due = await deps.store.apiKeys.listGraceEndedBefore(nowIso(deps), batchSize);
    let won = 0;
    for (const key of due) if (await endGrace(deps, key)) won++;
    ended += won;
    if (due.length < batchSize || won === 0) return ended;
  }
}

export async function revokeApiKey(
  deps: IdentityDeps,
  tenantId: string,
  keyId: string,
  caller?: CallerContext,
): Promise<ApiKey> {
  const revoked = await changeStatus(deps, tenantId, keyId, caller, (key) => {
    if (!key) throw new ApiKeyNotFound();
    if (!isUsableStatus(key.status)) throw new KeyTransitionNotAllowed('API key is already revoked');
    return { to: 'revoked', type: 'API_KEY_REVOKED' };
  });
  // changeStatus answers null only when decide does, which this one never does.
  return revoked!;
}

/**
 * staging → revoked for a staging key past its activation window, with API_KEY_REVOKED
 * (reason staging_expired). The write is guarded by the staging status, so exactly one caller
 * (sweeper, resolve or activate, on any instance) wins and the event is stored once; true when
 * this call won.
 */
async function expireStagingKey(deps: IdentityDeps, key: ApiKey, caller?: CallerContext): Promise<boolean> {
  const change: KeyChange = {
    to: 'revoked',
    type: 'API_KEY_REVOKED',
    data: { reason: STAGING_EXPIRED_REASON },
  };
  return (await writeStatus(deps, key, change, caller)) !== null;
}

/** The sweeper's pass: revokes every staging key past its activation window; how many this call revoked. */
export async function expireStagingKeys(deps: IdentityDeps, batchSize = 100): Promise<number> {
  let expired = 0;
  for (;;) {
    const cutoff = new Date(deps.clock.now().getTime() - stagingTtlMs(deps)).toISOString();
    const due = await deps.store.apiKeys.listStagingCreatedBefore(cutoff, batchSize);
    let won = 0;
    for (const key of due) if (await expireStagingKey(deps, key)) won++;
    expired += won;
    // A full batch that changed nothing is another instance's work in progress: leave it to the next pass.
    if (due.length < batchSize || won === 0) return expired;
  }
}

/**
 * The gateway's authentication step: a presented secret → its usable key and the tenant's plan.
 * Unknown, revoked, malformed and wrong-tenant secrets all answer the same NOT_FOUND.
 */
export async function resolveApiKey(
  deps: IdentityDeps,
  secret: string,
  expectedTenantId?: string,
): Promise<ResolvedKey> {
  if (!SECRET_PATTERN.test(secret)) throw new ApiKeyNotFound();
  const hash = hashSecret(secret);
  const record = await deps.store.apiKeys.findByHash(hash);
  // The index found it by equality already; the constant-time check keeps the comparison itself free of timing signal.
  if (!record || !hashesEqual(record.secret_hash, hash)) throw new ApiKeyNotFound();
  if (!isUsableStatus(record.status)) throw new ApiKeyNotFound();
  if (expectedTenantId !== undefined && expectedTenantId !== record.tenant_id) throw new ApiKeyNotFound();
  const key = toApiKey(record);
  // Refused the moment its window closes, before any sweep; the revocation is persisted here too.
  if (isStagingExpired(key, deps.clock.now(), stagingTtlMs(deps))) {
    await expireStagingKey(deps, key);
    throw new ApiKeyNotFound();
  }
  // Likewise a replaced key the moment its grace period ends (docs/API.md#api-key-rotation-grace).
  if (isGraceOver(key, deps.clock.now())) {
    await endGrace(deps, key);
    throw new ApiKeyNotFound();
  }
  const tenant = await deps.store.tenants.get(record.tenant_id);
  if (!tenant) throw new ApiKeyNotFound();
  // Its status was checked usable above.
  const resolved: ResolvedKey = { key: key as ResolvedKey['key'], plan: tenant.plan };
  if (key.status === 'staging')
    resolved.usableUntil = new Date(Date.parse(key.created_at) + stagingTtlMs(deps)).toISOString();
  return resolved;
}

/**
 * Records the keys a gateway served since its last report (docs/DECISIONS.md, "Credential
 * changes"): a key held in a gateway's cache is not resolved again, so its use is reported instead.
 */
export async function recordKeysUsed(
  deps: IdentityDeps,
  keys: { tenant_id: string; key_id: string }[],
): Promise<void> {
  await deps.store.apiKeys.touchMany(keys, nowIso(deps), LAST_USED_RESOLUTION_MS);
}

/** Records that a key was used; callers treat it as best effort. */
export async function recordKeyUse(deps: IdentityDeps, tenantId: string, keyId: string): Promise<void> {
  await deps.store.apiKeys.touch(tenantId, keyId, nowIso(deps), LAST_USED_RESOLUTION_MS);
}

/**
 * How far `as_of` trails the clock: a key whose insert was under way while the list was read, or
 * stamped by another replica whose clock is behind, is still at or after the next call's
 * `created_since`. The overlap is returned twice, which the gateway's set absorbs.
 */
export const USABLE_KEYS_OVERLAP_MS = 5_000;

/**
 * The gateway's list of usable keys (docs/DECISIONS.md, "Authentication"): each by its secret
 * hash's prefix, never more. Keys past their staging window or grace period are left out, as
 * resolving them would refuse them.
 */
export async function listUsableKeys(
  deps: IdentityDeps,
  query: { created_since?: string; limit?: number } | { keys: { tenant_id: string; key_id: string }[] },
): Promise<{ as_of: string; keys: UsableKey[] }> {
  const now = deps.clock.now();
  const asOf = new Date(now.getTime() - USABLE_KEYS_OVERLAP_MS).toISOString();
  const rows =
    'keys' in query
      ? await deps.store.apiKeys.usableHashesOf(query.keys)
      : await deps.store.apiKeys.listUsableHashes(query.created_since, query.limit ?? USABLE_KEYS_PAGE_MAX);
  const ttlMs = stagingTtlMs(deps);
  const stillUsable = (row: UsableKeyHash) => !isStagingExpired(row, now, ttlMs) && !isGraceOver(row, now);
  return {
    as_of: asOf,
    keys: rows.filter(stillUsable).map((r) => ({
      tenant_id: r.tenant_id,
      key_id: r.key_id,
      created_at: r.created_at,
      hash_prefix: r.secret_hash.slice(0, KEY_HASH_PREFIX_CHARS),
    })),
  };
}
