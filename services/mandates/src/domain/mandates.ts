import { createHash } from 'node:crypto';
import {
  badRequest,
  canonicalJson,
  conflict,
  newId,
  serviceUnavailable,
  type CallerContext,
  type Clock,
} from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import { mandateSigningPayload } from '@mandate/shared/mandate';
import {
  buildEvent,
  type AuditEvent,
  type EventRelay,
  type EventData,
  type EventInput,
  type EventType,
} from '@mandate/shared/events';
import { toPage, type ListOrder, type Page } from '@mandate/shared/contract';
import type { MandateSnapshots } from '../snapshots/mandate-snapshots';
import type { Signer } from '../signing/signer';
import type { CreateRequest, MandateStore } from '../store/mandate-store';
import type { StatusLists } from '../status-lists/status-lists';
import { ConcurrentModification, MandateNotFound, SigningUnavailable, SnapshotsUnavailable } from './errors';
import {
  EXPIRABLE_STATES,
  isPastExpiry,
  signedFieldsOf,
  withEffectiveState,
  effectiveState,
  type Mandate,
  type MandateState,
  type NewMandate,
  type Principal,
  type PrincipalVerification,
} from './mandate';
import { OPERATION_EVENT, nextState, type LifecycleOperation } from './state-machine';

/** How mandates binds an identity verification to the mandate it creates (identity decides, atomically). */
export interface IdentityVerifications {
  /**
   * The verification's result and the name it vouches for, marked used by `mandateId`; 404 / 409 as
   * identity answers them. With `principalName` (the request's principal.name), identity refuses a
   * name other than the verified one (400) before marking anything used.
   */
  consume(
    caller: CallerContext,
    verificationId: string,
    mandateId: string,
    principalName?: string,
  ): Promise<Omit<PrincipalVerification, 'method'> & { principal_name: string }>;
}

export interface MandateDeps {
  store: MandateStore;
  signer: Signer;
  clock: Clock;
  /** Versioned copies verify reads (docs/DEPLOYMENT.md, "Consistency and expiry"); absent → none are kept. */
  snapshots?: MandateSnapshots;
  logger?: Logger;
  /** Publishes the events each write stored with it; absent → they wait in the outbox for a relay. */
  relay?: EventRelay;
  /** Binds identity verifications (IDENTITY_URL); absent → principal.verification_id answers 503. */
  identityVerifications?: IdentityVerifications;
  /** Status lists (docs/DECISIONS.md, "Status lists (v3)"): each new mandate gets a slot, signed as its `status` claim; absent → none. */
  statusLists?: Pick<StatusLists, 'uriOf'>;
}

/** What changing a mandate needs: no signing (the signed fields never change). */
export type TransitionDeps = Omit<MandateDeps, 'signer'>;

export interface ListFilters {
  state?: MandateState;
  principal_id?: string;
  delegate_id?: string;
  q?: string;
  limit: number;
  afterId?: string;
  order: ListOrder;
  /** Also count everything the filters select (include_total). */
  withTotal: boolean;
}

export interface TransitionResult {
  mandate: Mandate;
  previous_state: MandateState;
}

/** A lost optimistic-concurrency race re-reads and re-decides; this bounds how often. */
const MAX_TRANSITION_ATTEMPTS = 5;

/** The canonical bytes the signature covers (RFC 8785 over the immutable fields; the shared contract). */
export function signingPayload(m: Mandate | Parameters<typeof signedFieldsOf>[0]): string {
  return mandateSigningPayload(signedFieldsOf(m));
}

/** The audit event of a mandate change, built before the write so it is stored in the same write. */
function mandateEvent<T extends EventType>(
  deps: TransitionDeps,
  type: T,
  tenantId: string,
  mandateId: string,
  data: EventData<T>,
  caller?: CallerContext,
): AuditEvent {
  // The signature ties data to its type; TypeScript cannot see that through the generic T.
  const input = { type, tenantId, resource: { type: 'mandate', id: mandateId }, data, caller };
  return buildEvent({ ...input, occurredAt: deps.clock.now() } as EventInput<T>);
}

/** After the write: hand the stored events to the relay (a failure leaves them in the outbox). */
export async function relay(deps: TransitionDeps, events: AuditEvent[]): Promise<void> {
  await deps.relay?.publishNow(events);
}

export async function createMandate(
  deps: MandateDeps,
  tenantId: string,
  input: NewMandate,
  caller?: CallerContext,
  /**
   * The request's Idempotency-Key hashed with its caller (requestKeyOf): the gateway's record of an
   * answer is lost when the gateway dies mid-request, so a retry under the same key is answered here
   * with the mandate the first attempt created, and nothing is created twice (docs/API.md, "Idempotency").
   */
  requestKey?: string,
): Promise<Mandate> {
  const request =
    requestKey === undefined
      ? undefined
      : { key: requestKey, digest: createHash('sha256').update(canonicalJson(input)).digest('hex') };
  if (request) {
    const earlier = await deps.store.findByRequestKey(tenantId, request.key);
    if (earlier) return retriedCreate(earlier, request);
  }
  const now = deps.clock.now();
  const validity = validityOf(input, now);
  const createdAt = now.toISOString();
  const id = newId('mdt');
  const principal = await principalOf(deps, id, input.principal, caller);
  // The slot is taken before signing (the claim is signed); a creation that fails later leaves it unused, never reused.
  const slot = deps.statusLists ? await deps.store.allocateStatusSlot() : undefined;
  const unsigned = {
    ...(slot && deps.statusLists
      ? { status: { status_list: { idx: slot.idx, uri: deps.statusLists.uriOf(slot.list_id) } } }
      : {}),
    id,
    tenant_id: tenantId,
    principal,
    delegate: input.delegate,
    scope: input.scope,
    ...validity,
    created_at: createdAt,
  };
  const mandate: Mandate = {
    ...unsigned,
    state: 'ACTIVE',
    metadata: input.metadata,
    version: 1,
    updated_at: createdAt,
    signature: await signatureOf(deps.signer, unsigned),
  };
  // The mandate and its MANDATE_CREATED are one write: an accepted mandate always has its event.
  const events = [
    mandateEvent(deps, 'MANDATE_CREATED', tenantId, mandate.id, { ...mandate, tenant_id: tenantId }, caller),
  ];
  let created: Mandate;
  try {
    created = await deps.store.create(tenantId, mandate, events, slot, request);
  } catch (err) {
    // A concurrent attempt under the same key stored its mandate first: that one is the answer.
    const earlier = request && (await deps.store.findByRequestKey(tenantId, request.key));
    if (earlier) return retriedCreate(earlier, request!);
    throw err;
  }
  // A new id has no older snapshot anywhere: if this write fails, verify simply reads it from here.
  await writeSnapshot(deps, created);
  await relay(deps, events);
  return created;
}

/** A new mandate's validity window, normalised: it must end after it starts, and in the future. */
function validityOf(input: NewMandate, now: Date): { valid_from: string | null; expires_at: string | null } {
  const validFrom = input.valid_from === null ? null : new Date(input.valid_from);
  const expiresAt = input.expires_at === null ? null : new Date(input.expires_at);
  if (expiresAt && validFrom && expiresAt.getTime() <= validFrom.getTime()) {
    throw badRequest('expires_at must be after valid_from');
  }
  if (expiresAt && expiresAt.getTime() <= now.getTime()) throw badRequest('expires_at must be in the future');
  return {
    valid_from: validFrom ? validFrom.toISOString() : null,
    expires_at: expiresAt ? expiresAt.toISOString() : null,
  };
}

/** The mandate's signature over its signed members; a signer that fails is SigningUnavailable (503). */
async function signatureOf(
  signer: Signer,
  unsigned: Parameters<typeof signingPayload>[0],
): Promise<Mandate['signature']> {
  let jws: string;
  try {
    jws = await signer.sign(signingPayload(unsigned));
  } catch (err) {
    throw new SigningUnavailable(err);
  }
  // Read after signing: a KMS signer learns its kid from the key it first signs with.
  return { alg: signer.alg, kid: signer.kid, jws };
}

/**
 * A create retried under an Idempotency-Key that already made a mandate: the same request gets that
 * mandate; another request under the key is the conflict the gateway answers while it holds the
 * key's record (docs/API.md, "Idempotency"), also once that record is gone. A mandate stored before
 * requests had digests (null) is answered as the same request.
 */
function retriedCreate(
  earlier: { mandate: Mandate; digest: string | null },
  request: CreateRequest,
): Mandate {
  if (earlier.digest !== null && earlier.digest !== request.digest)
    throw conflict('This Idempotency-Key was already used with a different request');
  return earlier.mandate;
}

/**
 * The principal to sign: with verification_id, identity consumes that verification for this mandate
 * (one guarded write there: one mandate per verification) and its result becomes `verified`.
 * An identity-verified principal's name is the verified one, never the request's: a request naming
 * it otherwise is refused by identity (400, the verification stays unused); one omitting it gets it.
 * The verification is spent even if this creation fails afterwards (signing, store): start another.
 */
async function principalOf(
  deps: MandateDeps,
  mandateId: string,
  input: NewMandate['principal'],
  caller?: CallerContext,
): Promise<Principal> {
  const { verification_id: verificationId, ...party } = input;
  if (verificationId === undefined) return party;
  if (!deps.identityVerifications || !caller)
    throw serviceUnavailable('Identity verification is not available on this service');
  const { principal_name: name, ...result } = await deps.identityVerifications.consume(
    caller,
    verificationId,
    mandateId,
    party.name,
  );
  return { ...party, name, verified: { method: 'openid4vp', ...result } };
}

/** Forward-only; a failure is logged, never fatal: a fence or a miss already keeps readers correct. True when written. */
async function writeSnapshot(deps: TransitionDeps, mandate: Mandate): Promise<boolean> {
  if (!deps.snapshots) return false;
  try {
    return await deps.snapshots.write(mandate);
  } catch (err) {
    deps.logger?.warn(
      { err, mandateId: mandate.id, version: mandate.version },
      'mandate snapshot not written',
    );
    return false;
  }
}

/**
 * Commits `stored` → `patch.state` at version + 1 so that no verify can answer from the old
 * version once this returns: fence first (readers stop trusting older snapshots), then the
 * conditional store write, then the new snapshot. Null when another writer got there first.
 */
async function commitTransition(
  deps: TransitionDeps,
  stored: Mandate,
  state: MandateState,
  now: Date,
  event: {
    type: (typeof OPERATION_EVENT)[LifecycleOperation] | 'MANDATE_EXPIRED';
    data?: { reason?: string; previous_state?: MandateState; expires_at?: string | null };
    caller?: CallerContext;
  },
): Promise<Mandate | null> {
  const version = stored.version + 1;
  if (deps.snapshots) {
    try {
      await deps.snapshots.fence(stored.tenant_id, stored.id, version);
    } catch (err) {
      throw new SnapshotsUnavailable(err);
    }
  }
  // Lifecycle events carry {previous_state, state, version, ...}; stored with the change, or not at all.
  const events = [
    mandateEvent(
      deps,
      event.type,
      stored.tenant_id,
      stored.id,
      { previous_state: effectiveState(stored, now), state, version, ...event.data },
      event.caller,
    ),
  ];
  const updated = await deps.store.transition(
    stored.tenant_id,
    stored.id,
    stored.version,
    { state, version, updated_at: now.toISOString() },
    events,
  );
  if (updated) {
    await writeSnapshot(deps, updated);
    await relay(deps, events);
  }
  return updated;
}

/**
 * Reads a mandate for verify and refreshes its snapshot on the way (a verify miss fills it).
 * The stored record goes into the snapshot; verify derives the effective state itself.
 */
export async function readForVerify(deps: TransitionDeps, tenantId: string, id: string): Promise<Mandate> {
  const stored = await deps.store.get(tenantId, id);
  if (!stored) throw new MandateNotFound();
  if (await writeSnapshot(deps, stored)) {
    // A refill writes what it read a moment ago. Had a change committed in between and Redis lost
    // its fence meanwhile (restarted empty), this copy would be older than the store with nothing
    // to fence it, an ALLOW for a revoked mandate until its next change (docs/OPERATIONS.md,
    // "Backup and restore": never a different answer). Reading again after the write moves it on.
    const after = await deps.store.get(tenantId, id);
    if (after && after.version > stored.version) await writeSnapshot(deps, after);
  }
  return withEffectiveState(stored, deps.clock.now());
}

export async function getMandate(deps: MandateDeps, tenantId: string, id: string): Promise<Mandate> {
  const stored = await deps.store.get(tenantId, id);
  if (!stored) throw new MandateNotFound();
  return withEffectiveState(stored, deps.clock.now());
}

/**
 * One page in the asked order, each mandate with its effective state; with `withTotal`, how many the
 * filters select, counted at the same `now` as the page, so both read one effective state.
 */
export async function listMandates(
  deps: MandateDeps,
  tenantId: string,
  { withTotal, ...filters }: ListFilters,
): Promise<Page<Mandate>> {
  const now = deps.clock.now();
  const [items, total] = await Promise.all([
    deps.store.list(tenantId, { ...filters, now }),
    withTotal ? deps.store.count(tenantId, { ...filters, now }) : undefined,
  ]);
  const page = toPage(
    items.map((m) => withEffectiveState(m, now)),
    filters.limit,
    (m) => m.id,
    filters.order,
  );
  return total === undefined ? page : { ...page, total };
}

/**
 * Applies a lifecycle operation to the state a reader would see now. The write only lands if
 * nobody changed the mandate since it was read; otherwise it re-reads and decides again, so two
 * concurrent revokes give one success and one "already revoked".
 */
export async function applyOperation(
  deps: TransitionDeps,
  tenantId: string,
  id: string,
  operation: LifecycleOperation,
  context: { caller?: CallerContext; reason?: string } = {},
): Promise<TransitionResult> {
  for (let attempt = 0; attempt < MAX_TRANSITION_ATTEMPTS; attempt++) {
    const stored = await deps.store.get(tenantId, id);
    if (!stored) throw new MandateNotFound();
    const now = deps.clock.now();
    const current = effectiveState(stored, now);
    const next = nextState(current, operation);
    const updated = await commitTransition(deps, stored, next, now, {
      type: OPERATION_EVENT[operation],
      caller: context.caller,
      // The lifecycle reason is kept in the event only.
      data: context.reason !== undefined ? { reason: context.reason } : undefined,
    });
    if (updated) return { mandate: withEffectiveState(updated, now), previous_state: current };
  }
  throw new ConcurrentModification();
}

export interface ExpiryResult {
  mandate: Mandate;
  previous_state: MandateState;
}

/**
 * Persists EXPIRED for a mandate past its expires_at. The conditional store write is the arbiter
 * between concurrent sweepers (any number of instances): exactly one caller gets a result, the
 * others (and calls on mandates not due) get null.
 */
export async function expireMandate(
  deps: TransitionDeps,
  tenantId: string,
  id: string,
): Promise<ExpiryResult | null> {
  for (let attempt = 0; attempt < MAX_TRANSITION_ATTEMPTS; attempt++) {
    const stored = await deps.store.get(tenantId, id);
    const now = deps.clock.now();
    if (!stored || !EXPIRABLE_STATES.includes(stored.state) || !isPastExpiry(stored, now)) return null;
    // A system actor: no caller. previous_state is the persisted state (ACTIVE or SUSPENDED).
    const updated = await commitTransition(deps, stored, 'EXPIRED', now, {
      type: 'MANDATE_EXPIRED',
      data: { previous_state: stored.state, expires_at: stored.expires_at },
    });
    if (updated) return { mandate: updated, previous_state: stored.state };
    // Lost a race: someone suspended, reactivated, revoked or expired it meanwhile; look again.
  }
  return null;
}
