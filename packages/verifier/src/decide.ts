/**
 * The verify decision (docs/API.md, "Verify"): one module, imported by the verify service and by
 * `verifyOffline`, so both answer with the same reason for the same mandate, state and request.
 * Dependency-free on purpose: it ships in the standalone package.
 */

/** Deny reasons, in the order the checks run (the first failing one is the answer). */
export const DENY_REASONS = [
  'MANDATE_SUSPENDED',
  'MANDATE_REVOKED',
  'MANDATE_EXPIRED',
  'MANDATE_NOT_YET_VALID',
  'DELEGATE_MISMATCH',
  'PRINCIPAL_NOT_VERIFIED',
  'ASSURANCE_TOO_LOW',
  'ACTION_NOT_PERMITTED',
  'RESOURCE_NOT_PERMITTED',
  'AMOUNT_REQUIRED',
  'CURRENCY_MISMATCH',
  'AMOUNT_EXCEEDS_LIMIT',
  // Only where the amount available now is known (verify, authorizations); never offline.
  'BUDGET_EXCEEDED',
] as const;
export type DenyReason = (typeof DENY_REASONS)[number];

/** Assurance levels of a wallet verification, lowest first. */
export const ASSURANCE_LEVELS = ['LOW', 'SUBSTANTIAL', 'HIGH'] as const;
export type AssuranceLevel = (typeof ASSURANCE_LEVELS)[number];

/** The mandate states, as the mandates service's contract declares them (it imports nothing, so they are spelled here). */
export type DecisionState = 'ACTIVE' | 'SUSPENDED' | 'REVOKED' | 'EXPIRED';

/** What a decision reads of a mandate: all of it inside the signed fields. */
export interface DecisionMandate {
  principal?: { verified?: { assurance: string } | null } | null;
  delegate: { id: string };
  scope: {
    actions: readonly string[];
    resources?: readonly string[] | null;
    constraints?: { max_amount?: number | null; currency?: string | null } | null;
    /** What the delegate may spend over time (docs/API.md#budgets): decided only where `available` is known. */
    budget?: { amount: number } | null;
  };
  valid_from?: string | null;
}

export interface DecisionInput {
  action: string;
  resource?: string;
  amount?: number;
  currency?: string;
  delegate_id?: string;
  min_assurance?: string;
}

/** The first failing check, or null when every check passes. */
export function firstFailure(
  mandate: DecisionMandate,
  state: DecisionState,
  input: DecisionInput,
  now: Date,
  /** The budget's amount available now, where it is known (verify); absent offline: unchecked. */
  budgetAvailable?: number,
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

  // Fail closed (docs/API.md, "Verify"): a scope that names resources, amounts or a currency is never
  // satisfied by a request that leaves them out. A stored `resources: []` (refused at create
  // since v2) matches nothing rather than anything.
  const resources = mandate.scope.resources;
  if (resources !== undefined && resources !== null) {
    if (input.resource === undefined || !anyMatches(resources, asDecided(input.resource), resourceMatches)) {
      return 'RESOURCE_NOT_PERMITTED';
    }
  }

  const constraints = mandate.scope.constraints ?? {};
  if (constraints.max_amount != null && input.amount === undefined) return 'AMOUNT_REQUIRED';
  if (constraints.currency != null && input.currency !== constraints.currency) return 'CURRENCY_MISMATCH';
  if (constraints.max_amount != null && input.amount !== undefined && input.amount > constraints.max_amount)
    return 'AMOUNT_EXCEEDS_LIMIT';
  if (mandate.scope.budget != null && budgetAvailable !== undefined && input.amount !== undefined)
    if (input.amount > budgetAvailable) return 'BUDGET_EXCEEDED';
  return null;
}

/**
 * The requested resource as it is matched: NFC, the form a mandate's resource patterns are stored
 * in (docs/API.md, "Hardening"), so one resource spelt with composed or decomposed characters ("é" as one code
 * point or as "e" and a combining accent) is decided one way — never denied in one spelling and
 * allowed by a prefix pattern in the other. Printable ASCII, nearly every resource, is NFC already.
 */
const asDecided = (resource: string): string =>
  NOT_ASCII.test(resource) ? resource.normalize('NFC') : resource;
const NOT_ASCII = /[^ -~]/;

const rank = (level: string): number => (ASSURANCE_LEVELS as readonly string[]).indexOf(level);

/**
 * Scope pattern matching (docs/API.md, "Mandates": "a trailing `*` segment matches any suffix").
 * Matching is exact and case-sensitive otherwise; a `*` anywhere but at the end is literal.
 */

/** Actions: exact, `*` (everything), or `prefix:*` (anything below `prefix:`, at any depth). */
export function actionMatches(pattern: string, action: string): boolean {
  if (pattern === '*' || pattern === action) return true;
  if (pattern.endsWith(':*')) return action.startsWith(pattern.slice(0, -1));
  return false;
}

/**
 * Resources: the action rule, plus any trailing `*` (`/accounts/*`, `acct_*`) matching any
 * suffix, since resource ids are not always `:`-segmented.
 */
export function resourceMatches(pattern: string, resource: string): boolean {
  if (pattern === '*' || pattern === resource) return true;
  if (pattern.endsWith('*')) return resource.startsWith(pattern.slice(0, -1));
  return false;
}

export const anyMatches = (
  patterns: readonly string[],
  value: string,
  matches: (p: string, v: string) => boolean,
) => patterns.some((p) => matches(p, value));

// The request's input rules ship with the decision: verify's contract and the offline verifier read them here.
export * from './request';

// The reasons in words ship with the decision too: the dashboard and docs/API.md read them here.
export * from './reasons';
