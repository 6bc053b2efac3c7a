import { canonicalJson, sha256Hex } from '@mandate/shared/core';
import { effectiveState } from '@mandate/shared/mandate';
import type { Mandate, MandateState } from './mandate';
// The checks themselves live in one module shared with the offline verifier (@mandate/verifier).
import { firstFailure, type DecisionInput } from '@mandate/verifier/decide';

/** The request body as validated by the HTTP layer: the decision's input and the mandate it names. */
export interface VerifyInput extends DecisionInput {
  mandate_id: string;
}

// The deny reasons are wire vocabulary: the contract's.
import { type DenyReason } from '../contract';
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

/**
 * A pure function of (mandate version, input, now): the same input against the same mandate
 * version always yields the same decision_id. Only the reason may change with time (expiry,
 * valid_from), which is inherent to the question "may this delegate do this now?".
 */
export function decide(mandate: Mandate, input: VerifyInput, now: Date, budgetAvailable?: number): Decision {
  const state = effectiveState(mandate, now);
  const failure = firstFailure(mandate, state, input, now, budgetAvailable);
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
