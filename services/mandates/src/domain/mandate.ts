/** The mandate as stored and as served (SPEC §5 "Mandates"); JSON field names are the wire names. */
import {
  EXPIRABLE_STATES as CONTRACT_EXPIRABLE_STATES,
  MANDATE_SIGNED_FIELDS,
  effectiveState,
  isPastExpiry,
} from '@mandate/shared';

import type { AssuranceLevel, MandateState, PartyType } from '../contract';

// The wire vocabulary is the contract's; the domain speaks it.
export { MANDATE_STATES, PARTY_TYPES, type MandateState, type PartyType } from '../contract';

export interface Party {
  id: string;
  type?: PartyType;
  name?: string;
}

/** The principal's wallet verification (signed with the principal). */
export interface PrincipalVerification {
  method: 'openid4vp';
  assurance: AssuranceLevel;
  verification_id: string;
  issuer: string;
  subject_id: string;
  claims_digest: string;
  verified_at: string;
}

export interface Principal extends Party {
  verified?: PrincipalVerification;
}

export interface Scope {
  actions: string[];
  resources?: string[];
  constraints?: { max_amount?: number; currency?: string };
}

export interface MandateSignature {
  alg: 'ES256';
  kid: string;
  jws: string;
}

/** The mandate's entry in a status list (SPEC §12), signed with it. */
export interface MandateStatus {
  status_list: { idx: number; uri: string };
}

export interface Mandate {
  id: string;
  tenant_id: string;
  principal: Principal;
  delegate: Party;
  scope: Scope;
  state: MandateState;
  valid_from: string | null;
  expires_at: string | null;
  metadata: Record<string, string>;
  version: number;
  created_at: string;
  updated_at: string;
  signature: MandateSignature;
  /** Absent on mandates signed before status lists: those are verified online only. */
  status?: MandateStatus;
}

/** What a client may set at creation, already shape-validated and normalised (shorthands expanded, defaults applied). */
export interface NewMandate {
  /** verification_id: bind a VERIFIED wallet verification (consumed by this mandate, becomes `verified`). */
  principal: Party & { verification_id?: string };
  delegate: Party;
  scope: Scope;
  valid_from: string | null;
  expires_at: string | null;
  metadata: Record<string, string>;
}

/** The fields the signature covers: everything that never changes after creation (the shared contract). */
export const IMMUTABLE_FIELDS = MANDATE_SIGNED_FIELDS;
export type SignedFields = Pick<Mandate, (typeof IMMUTABLE_FIELDS)[number]> & Pick<Mandate, 'status'>;

export function signedFieldsOf(m: SignedFields): SignedFields {
  return {
    ...(m.status ? { status: m.status } : {}),
    id: m.id,
    tenant_id: m.tenant_id,
    principal: m.principal,
    delegate: m.delegate,
    scope: m.scope,
    valid_from: m.valid_from,
    expires_at: m.expires_at,
    created_at: m.created_at,
  };
}

/** Stored states that time can turn into EXPIRED (the snapshot contract's, as this service's states). */
export const EXPIRABLE_STATES: readonly MandateState[] = CONTRACT_EXPIRABLE_STATES;

// The state a reader sees is part of the snapshot contract verify reads too; see @mandate/shared.
export { effectiveState, isPastExpiry };

export function withEffectiveState(m: Mandate, now: Date): Mandate {
  const state = effectiveState(m, now);
  return state === m.state ? m : { ...m, state };
}
