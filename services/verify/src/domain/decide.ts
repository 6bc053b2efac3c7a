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
}

/** Checked in exactly this order; the first failing one is the reason (SPEC §5 Verify). */
export const DENY_REASONS = [
  'MANDATE_SUSPENDED',
  'MANDATE_REVOKED',
  'MANDATE_EXPIRED',
  'MANDATE_NOT_YET_VALID',
  'DELEGATE_MISMATCH',
  'ACTION_NOT_PERMITTED',
  'RESOURCE_NOT_PERMITTED',
  'AMOUNT_REQUIRED',
  'CURRENCY_MISMATCH',
  'AMOUNT_EXCEEDS_LIMIT',
] as const;
export type DenyReason = (typeof DENY_REASONS)[number];
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

export function decisionId(
  mandate: Pick<Mandate, 'id' | 'tenant_id' | 'version'>,
  input: VerifyInput,
): string {
  const canonical =
    decisionIdInput(mandate, input) ??
    canonicalJson({
      tenant_id: mandate.tenant_id,
      input,
      mandate_id: mandate.id,
      mandate_version: mandate.version,
    });
  return `dec_${sha256Hex(canonical).slice(0, 26)}`;
}

const INPUT_KEYS = new Set(['action', 'amount', 'currency', 'delegate_id', 'mandate_id', 'resource']);
const str = (name: string, value: unknown) => `,"${name}":${JSON.stringify(value)}`;

/**
 * The canonical JSON (RFC 8785) of the decision_id input built directly for its fixed shape —
 * byte-identical to canonicalJson of `{tenant_id, input, mandate_id, mandate_version}` (keys sorted,
 * undefined members left out, strings and numbers as JSON.stringify writes them). Anything outside
 * that shape (an unknown key, a value of another type) answers undefined and goes the general way.
 */
export function decisionIdInput(
  mandate: Pick<Mandate, 'id' | 'tenant_id' | 'version'>,
  input: VerifyInput,
): string | undefined {
  const { id, tenant_id: tenantId, version } = mandate;
  if (typeof id !== 'string' || typeof tenantId !== 'string' || !Number.isFinite(version)) return undefined;
  const proto: unknown = Object.getPrototypeOf(input);
  if (proto !== Object.prototype && proto !== null) return undefined;
  for (const key in input) if (!INPUT_KEYS.has(key)) return undefined;
  const { action, amount, currency, delegate_id: delegate, mandate_id: mandateId, resource } = input;
  let members = '';
  if (action !== undefined) {
    if (typeof action !== 'string') return undefined;
    members += str('action', action);
  }
  if (amount !== undefined) {
    if (!Number.isFinite(amount)) return undefined;
    members += str('amount', amount);
  }
  if (currency !== undefined) {
    if (typeof currency !== 'string') return undefined;
    members += str('currency', currency);
  }
  if (delegate !== undefined) {
    if (typeof delegate !== 'string') return undefined;
    members += str('delegate_id', delegate);
  }
  if (mandateId !== undefined) {
    if (typeof mandateId !== 'string') return undefined;
    members += str('mandate_id', mandateId);
  }
  if (resource !== undefined) {
    if (typeof resource !== 'string') return undefined;
    members += str('resource', resource);
  }
  return `{"input":{${members.slice(1)}},"mandate_id":${JSON.stringify(id)},"mandate_version":${JSON.stringify(version)},"tenant_id":${JSON.stringify(tenantId)}}`;
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
