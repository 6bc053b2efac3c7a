/** The mandate as stored and as served (docs/API.md, "Mandates"); JSON field names are the wire names. */
import {
  EXPIRABLE_STATES as CONTRACT_EXPIRABLE_STATES,
  MANDATE_SIGNED_FIELDS,
  effectiveState,
  isPastExpiry,
} from '@mandate/shared/mandate';

import type { z } from 'zod';
import type {
  MandateState,
  mandateSchema,
  partySchema,
  principalSchema,
  principalVerificationSchema,
  scopeSchema,
} from '../contract';

// The wire vocabulary is the contract's; the domain speaks it.
export { MANDATE_STATES, PARTY_TYPES, type MandateState, type PartyType } from '../contract';

// The mandate's shape is the contract's schema (one declaration for the wire and the domain).
export type Party = z.output<typeof partySchema>;
/** The principal's wallet verification (signed with the principal). */
export type PrincipalVerification = z.output<typeof principalVerificationSchema>;
export type Principal = z.output<typeof principalSchema>;
export type Scope = z.output<typeof scopeSchema>;
export type MandateSignature = Mandate['signature'];
/** The mandate's entry in a status list (docs/DECISIONS.md, "Status lists (v3)"), signed with it. Absent on mandates signed before status lists. */
export type MandateStatus = NonNullable<Mandate['status']>;
export type Mandate = z.output<typeof mandateSchema>;

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

/**
 * What `q` searches (docs/API.md, "Mandates"): the principal's and delegate's ids and names,
 * lower-cased, one per line. Names and ids are printable text (no line breaks) and so is `q`, so a
 * match never spans two fields. The MongoDB adapter stores it, the in-memory one computes it.
 */
export function searchTextOf(m: Pick<Mandate, 'principal' | 'delegate'>): string {
  return [m.principal.id, m.principal.name, m.delegate.id, m.delegate.name]
    .filter((v): v is string => v !== undefined)
    .join('\n')
    .toLowerCase();
}

/** `q` as searchTextOf's text is compared with it: lower-cased, taken literally. */
export const searchNeedleOf = (q: string): string => q.toLowerCase();
