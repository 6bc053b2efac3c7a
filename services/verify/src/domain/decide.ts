import { canonicalJson, effectiveState, sha256Hex } from '@mandate/shared';
import type { Mandate, MandateState } from './mandate';
import { actionMatches, anyMatches, resourceMatches } from './patterns';

/** The request body as validated by the HTTP layer. */
export interface VerifyInput {
  mandate_id: string;
  action: string;
  resource?: string;
  amount?: number;
  currency?: string;
  delegate_id?: string;
  min_assurance?: string;
}

// The deny reasons are wire vocabulary: the contract's.
import { ASSURANCE_LEVELS, type DenyReason } from '../contract';
export { DENY_REASONS, type DenyReason } from '../contract';
export type Reason = 'OK' | DenyReason;

export interface Decision {
  decision: 'ALLOW' | 'DENY';
  reason: Reason;
  mandate_id: string;
  mandate_state: MandateState;
  mandate_version: number;
  decision_id: string;
}

/** The first failing check, or null when every check passes. */
function firstFailure(
  mandate: Mandate,
  state: MandateState,
  input: VerifyInput,
  now: Date,
): DenyReason | null {
  if (state === 'SUSPENDED') return 'MANDATE_SUSPENDED';
  if (state === 'REVOKED') return 'MANDATE_REVOKED';
  if (state === 'EXPIRED') return 'MANDATE_EXPIRED';
  if (mandate.valid_from && Date.parse(mandate.valid_from) > now.getTime()) return 'MANDATE_NOT_YET_VALID';
  if (input.delegate_id !== undefined && input.delegate_id !== mandate.delegate.id)
    return 'DELEGATE_MISMATCH';
  if (input.min_assurance !== undefined) {
    const assurance = mandate.principal?.verified?.assurance;
    if (assurance === undefined) return 'PRINCIPAL_NOT_VERIFIED';
    // An unknown level ranks below every known one: fail closed.
    if (rank(assurance) < rank(input.min_assurance)) return 'ASSURANCE_TOO_LOW';
  }
  if (!anyMatches(mandate.scope.actions, input.action, actionMatches)) return 'ACTION_NOT_PERMITTED';

  // Fail closed (SPEC §5 v2): a scope that names resources, amounts or a currency is never
  // satisfied by a request that leaves them out. A stored `resources: []` (refused at create
  // since v2) matches nothing rather than anything.
  const resources = mandate.scope.resources;
  if (resources !== undefined && resources !== null) {
    if (input.resource === undefined || !anyMatches(resources, input.resource, resourceMatches)) {
      return 'RESOURCE_NOT_PERMITTED';
    }
  }

  const constraints = mandate.scope.constraints ?? {};
  if (constraints.max_amount != null && input.amount === undefined) return 'AMOUNT_REQUIRED';
  if (constraints.currency != null && input.currency !== constraints.currency) return 'CURRENCY_MISMATCH';
  if (constraints.max_amount != null && input.amount !== undefined && input.amount > constraints.max_amount)
    return 'AMOUNT_EXCEEDS_LIMIT';
  return null;
}

const rank = (level: string): number => (ASSURANCE_LEVELS as readonly string[]).indexOf(level);

/**
 * A pure function of (mandate version, input, now): the same input against the same mandate
 * version always yields the same decision_id. Only the reason may change with time (expiry,
 * valid_from), which is inherent to the question "may this delegate do this now?".
 */
export function decide(mandate: Mandate, input: VerifyInput, now: Date): Decision {
  const state = effectiveState(mandate, now);
  const failure = firstFailure(mandate, state, input, now);
  return {
    decision: failure ? 'DENY' : 'ALLOW',
    reason: failure ?? 'OK',
    mandate_id: mandate.id,
    mandate_state: state,
    mandate_version: mandate.version,
    decision_id: decisionId(mandate, input),
  };
}

/** dec_ + the first 26 hex digits of the SHA-256 of the canonical JSON of (tenant, input, mandate id and version). */
export function decisionId(
  mandate: Pick<Mandate, 'id' | 'tenant_id' | 'version'>,
  input: VerifyInput,
): string {
  const canonical = canonicalJson({
    tenant_id: mandate.tenant_id,
    input,
    mandate_id: mandate.id,
    mandate_version: mandate.version,
  });
  return `dec_${sha256Hex(canonical).slice(0, 26)}`;
}

/** The response body with a fixed key order, so identical decisions are byte-identical on the wire. */
export function serialiseDecision(d: Decision): string {
  return JSON.stringify({
    decision: d.decision,
    reason: d.reason,
    mandate_id: d.mandate_id,
    mandate_state: d.mandate_state,
    mandate_version: d.mandate_version,
    decision_id: d.decision_id,
  });
}
