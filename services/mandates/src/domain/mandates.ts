import { badRequest, canonicalJson, newId, type Clock } from '@mandate/shared';
import type { Signer } from '../signing/signer';
import type { MandateStore } from '../store/mandate-store';
import { ConcurrentModification, MandateNotFound, SigningUnavailable } from './errors';
import {
  signedFieldsOf,
  withEffectiveState,
  effectiveState,
  type Mandate,
  type MandateState,
  type NewMandate,
} from './mandate';
import { nextState, type LifecycleOperation } from './state-machine';

export interface MandateDeps {
  store: MandateStore;
  signer: Signer;
  clock: Clock;
}

export interface ListFilters {
  state?: MandateState;
  principal_id?: string;
  delegate_id?: string;
  limit: number;
  afterId?: string;
}

export interface TransitionResult {
  mandate: Mandate;
  previous_state: MandateState;
}

/** A lost optimistic-concurrency race re-reads and re-decides; this bounds how often. */
const MAX_TRANSITION_ATTEMPTS = 5;

/** The canonical bytes the signature covers (RFC 8785 over the immutable fields). */
export function signingPayload(m: Mandate | Parameters<typeof signedFieldsOf>[0]): string {
  return canonicalJson(signedFieldsOf(m));
}

export async function createMandate(
  deps: MandateDeps,
  tenantId: string,
  input: NewMandate,
): Promise<Mandate> {
  const now = deps.clock.now();
  const validFrom = input.valid_from === null ? null : new Date(input.valid_from);
  const expiresAt = input.expires_at === null ? null : new Date(input.expires_at);
  if (expiresAt && validFrom && expiresAt.getTime() <= validFrom.getTime()) {
    throw badRequest('expires_at must be after valid_from');
  }
  if (expiresAt && expiresAt.getTime() <= now.getTime()) throw badRequest('expires_at must be in the future');

  const createdAt = now.toISOString();
  const unsigned = {
    id: newId('mdt'),
    tenant_id: tenantId,
    principal: input.principal,
    delegate: input.delegate,
    scope: input.scope,
    valid_from: validFrom ? validFrom.toISOString() : null,
    expires_at: expiresAt ? expiresAt.toISOString() : null,
    created_at: createdAt,
  };
  let jws: string;
  try {
    jws = await deps.signer.sign(signingPayload(unsigned));
  } catch (err) {
    throw new SigningUnavailable(err);
  }
  const mandate: Mandate = {
    ...unsigned,
    state: 'ACTIVE',
    metadata: input.metadata,
    version: 1,
    updated_at: createdAt,
    signature: { alg: deps.signer.alg, kid: deps.signer.kid, jws },
  };
  return deps.store.create(tenantId, mandate);
}

export async function getMandate(deps: MandateDeps, tenantId: string, id: string): Promise<Mandate> {
  const stored = await deps.store.get(tenantId, id);
  if (!stored) throw new MandateNotFound();
  return withEffectiveState(stored, deps.clock.now());
}

/** Newest first, up to limit + 1 (for toPage), each with its effective state. */
export async function listMandates(
  deps: MandateDeps,
  tenantId: string,
  filters: ListFilters,
): Promise<Mandate[]> {
  const now = deps.clock.now();
  const items = await deps.store.list(tenantId, { ...filters, now });
  return items.map((m) => withEffectiveState(m, now));
}

/**
 * Applies a lifecycle operation to the state a reader would see now. The write only lands if
 * nobody changed the mandate since it was read; otherwise it re-reads and decides again, so two
 * concurrent revokes give one success and one "already revoked".
 */
export async function applyOperation(
  deps: MandateDeps,
  tenantId: string,
  id: string,
  operation: LifecycleOperation,
): Promise<TransitionResult> {
  for (let attempt = 0; attempt < MAX_TRANSITION_ATTEMPTS; attempt++) {
    const stored = await deps.store.get(tenantId, id);
    if (!stored) throw new MandateNotFound();
    const now = deps.clock.now();
    const current = effectiveState(stored, now);
    const next = nextState(current, operation);
    const updated = await deps.store.transition(tenantId, id, stored.version, {
      state: next,
      version: stored.version + 1,
      updated_at: now.toISOString(),
    });
    if (updated) return { mandate: withEffectiveState(updated, now), previous_state: current };
  }
  throw new ConcurrentModification();
}
