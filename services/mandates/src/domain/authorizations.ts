import { createHash } from 'node:crypto';
import { firstFailure, type DenyReason } from '@mandate/verifier/decide';
import {
  AppError,
  badRequest,
  canonicalJson,
  newId,
  sha256Hex,
  type CallerContext,
} from '@mandate/shared/core';
import { effectiveState } from '@mandate/shared/mandate';
import { periodBounds } from '../budget-period';
import { buildEvent, type AuditEvent, type EventType } from '@mandate/shared/events';
import type { Authorization, AuthorizationStatus, BudgetState, HoldBody } from '../budget-contract';
import type { EventsOf, PeriodRef, PeriodTotals, Settlement } from '../store/authorization-store';
import { MandateNotFound } from './errors';
import type { Mandate } from './mandate';
import { relay, type TransitionDeps } from './mandates';

/**
 * Spend authorizations against a mandate's budget (docs/API.md#budgets): hold, capture, void,
 * expiry and the reads. Every check of verify runs first (the shared decision module); the budget
 * is then decided by the store's one conditional write, never here.
 */

export class AuthorizationNotFound extends AppError {
  constructor() {
    super('NOT_FOUND', 'Authorization not found');
  }
}

export type HoldAnswer =
  | {
      status: 201;
      body: {
        decision: 'ALLOW';
        reason: 'OK';
        mandate_id: string;
        mandate_version: number;
        decision_id: string;
        authorization: Authorization;
        budget: BudgetState | null;
      };
    }
  | {
      status: 200;
      body: {
        decision: 'DENY';
        reason: DenyReason;
        mandate_id: string;
        mandate_version: number;
        decision_id: string;
        budget: BudgetState | null;
      };
    };

/** The period `now` falls in: `total` counts from the mandate's creation and never ends. */
export function currentPeriod(mandate: Mandate, now: Date): { start: string; end: string | null } {
  const budget = mandate.scope.budget;
  if (!budget) return { start: mandate.created_at, end: null };
  const bounds = periodBounds(budget.period, budget.timezone, now);
  return { start: bounds.start?.toISOString() ?? mandate.created_at, end: bounds.end?.toISOString() ?? null };
}

/** The budget as served: null for a mandate without one. */
export function budgetState(
  mandate: Mandate,
  period: { start: string; end: string | null },
  totals: PeriodTotals,
): BudgetState | null {
  const budget = mandate.scope.budget;
  if (!budget) return null;
  return {
    amount: budget.amount,
    currency: mandate.scope.constraints?.currency ?? '',
    period: budget.period,
    timezone: budget.timezone,
    period_start: period.start,
    period_end: period.end,
    captured: totals.captured,
    held: totals.held,
    available: Math.max(0, budget.amount - totals.captured - totals.held),
  };
}

/** The period an authorization counts in, with its end (the budget's period containing its start). */
function periodOf(mandate: Mandate, a: Authorization): { start: string; end: string | null } {
  const budget = mandate.scope.budget;
  if (!budget || budget.period === 'total') return { start: a.period_start, end: null };
  return { start: a.period_start, end: currentPeriod(mandate, new Date(a.period_start)).end };
}

/** What a reader sees: a HELD authorization past expires_at is EXPIRED at once (the sweeper persists it). */
export function effectiveAuthorization(a: Authorization, now: Date): Authorization {
  return a.status === 'HELD' && Date.parse(a.expires_at) <= now.getTime() ? { ...a, status: 'EXPIRED' } : a;
}

/**
 * A retried hold's identity: the caller and its Idempotency-Key (docs/API.md#budgets), so a retry
 * after a crash at any point finds the first hold instead of holding again. Hashed: the key is the
 * client's text, stored nowhere in clear.
 */
export function requestKeyOf(caller: CallerContext, idempotencyKey: string | undefined): string | undefined {
  if (idempotencyKey === undefined) return undefined;
  const who = `${caller.actor.type}:${caller.actor.key_id ?? caller.actor.subject_id ?? ''}`;
  return createHash('sha256').update(`${who}\u0000${idempotencyKey}`).digest('hex');
}

function decisionIdOf(mandate: Mandate, input: Record<string, unknown>): string {
  const canonical = canonicalJson({
    tenant_id: mandate.tenant_id,
    input,
    mandate_id: mandate.id,
    mandate_version: mandate.version,
  });
  return `dec_${sha256Hex(canonical).slice(0, 26)}`;
}

const EVENT_OF = {
  HELD: 'AUTHORIZATION_HELD',
  CAPTURED: 'AUTHORIZATION_CAPTURED',
  VOIDED: 'AUTHORIZATION_VOIDED',
  EXPIRED: 'AUTHORIZATION_EXPIRED',
} as const satisfies Record<AuthorizationStatus, EventType>;

/** The events of a change: the authorization and the budget after it (about the mandate, so in its evidence). */
function eventsOf(
  deps: TransitionDeps,
  mandate: Mandate,
  caller: CallerContext | undefined,
  extra: Record<string, unknown> = {},
): EventsOf {
  return (authorization, totals) => [
    buildEvent({
      type: EVENT_OF[authorization.status],
      tenantId: mandate.tenant_id,
      resource: { type: 'mandate', id: mandate.id },
      data: {
        authorization,
        budget: budgetState(mandate, periodOf(mandate, authorization), totals),
        ...extra,
      },
      caller,
      occurredAt: deps.clock.now(),
    }),
  ];
}

/** Relays whatever a store call stored (the builder is called inside it). */
function capturing(build: EventsOf): { build: EventsOf; built: AuditEvent[] } {
  const built: AuditEvent[] = [];
  return {
    built,
    build: (a, t) => {
      const events = build(a, t);
      built.push(...events);
      return events;
    },
  };
}

async function mandateOf(deps: TransitionDeps, tenantId: string, id: string): Promise<Mandate> {
  const mandate = await deps.store.get(tenantId, id);
  if (!mandate) throw new MandateNotFound();
  return mandate;
}

/** The HELD authorization a hold request asks for, counted in `period`. */
function heldAuthorization(mandate: Mandate, body: HoldBody, now: Date, periodStart: string): Authorization {
  const iso = now.toISOString();
  return {
    id: newId('sau'),
    mandate_id: mandate.id,
    action: body.action,
    resource: body.resource ?? null,
    amount: body.amount,
    currency: body.currency,
    status: 'HELD',
    captured_amount: 0,
    period_start: periodStart,
    expires_at: new Date(now.getTime() + body.hold_seconds * 1000).toISOString(),
    created_at: iso,
    updated_at: iso,
  };
}

/** Every check of verify, in verify's order (the one decision module); the budget is the store's. */
function holdFailure(mandate: Mandate, body: HoldBody, now: Date): DenyReason | null {
  const { action, resource, amount, currency, delegate_id } = body;
  return firstFailure(
    mandate,
    effectiveState(mandate, now),
    { action, resource, amount, currency, delegate_id },
    now,
  );
}

export async function holdAuthorization(
  deps: TransitionDeps,
  tenantId: string,
  mandateId: string,
  body: HoldBody,
  caller: CallerContext | undefined,
  requestKey: string | undefined,
): Promise<HoldAnswer> {
  const mandate = await mandateOf(deps, tenantId, mandateId);
  const now = deps.clock.now();
  const period = currentPeriod(mandate, now);
  const decided = {
    mandate_id: mandate.id,
    mandate_version: mandate.version,
    decision_id: decisionIdOf(mandate, { ...body }),
  };
  const deny = async (reason: DenyReason, totals?: PeriodTotals): Promise<HoldAnswer> => {
    const known =
      totals ?? (await deps.store.authorizations.periodTotals(tenantId, mandate.id, period.start));
    return {
      status: 200,
      body: { decision: 'DENY', reason, ...decided, budget: budgetState(mandate, period, known) },
    };
  };
  const failure = holdFailure(mandate, body, now);
  if (failure) return deny(failure);

  const ref: PeriodRef = { start: period.start, limit: mandate.scope.budget?.amount ?? null };
  const authorization = heldAuthorization(mandate, body, now, period.start);
  const events = capturing(eventsOf(deps, mandate, caller));
  const hold = () => deps.store.authorizations.hold(tenantId, authorization, ref, requestKey, events.build);
  let outcome = await hold();
  // Holds past their expiry still count until the sweeper releases them; before refusing, release
  // this mandate's (as the sweeper would), then decide once more.
  if (!outcome.held && (await expireDueHolds(deps, mandate)) > 0) outcome = await hold();
  if (!outcome.held) return deny('BUDGET_EXCEEDED', outcome.totals);
  await relay(deps, events.built);
  const budget = budgetState(mandate, periodOf(mandate, outcome.authorization), outcome.totals);
  return {
    status: 201,
    body: { decision: 'ALLOW', reason: 'OK', ...decided, authorization: outcome.authorization, budget },
  };
}

/** Expires a mandate's HELD authorizations past expires_at; how many this call expired. */
async function expireDueHolds(deps: TransitionDeps, mandate: Mandate): Promise<number> {
  const now = deps.clock.now();
  let expired = 0;
  for (const a of await deps.store.authorizations.heldAuthorizations(mandate.tenant_id, mandate.id, 100)) {
    if (Date.parse(a.expires_at) > now.getTime()) continue;
    if (await expireAuthorization(deps, mandate.tenant_id, a.id)) expired++;
  }
  return expired;
}

/**
 * Whether `a` is already what `settlement` would make of it: a capture or void retried with its
 * Idempotency-Key after its first attempt was done but not answered (a crash, a timeout) is
 * answered as that first attempt was (docs/API.md#budgets), not with a 409.
 */
function alreadyDone(a: Authorization, settlement: (a: Authorization) => Settlement): boolean {
  if (a.status !== 'CAPTURED' && a.status !== 'VOIDED') return false;
  const change = settlement({ ...a, status: 'HELD' });
  return (
    change.status === a.status &&
    (change.status !== 'CAPTURED' || change.captured_amount === a.captured_amount)
  );
}

async function settle(
  deps: TransitionDeps,
  tenantId: string,
  id: string,
  settlement: (a: Authorization) => Settlement,
  caller: CallerContext | undefined,
  options: { extra?: Record<string, unknown>; retry?: boolean } = {},
): Promise<Authorization> {
  const { extra, retry = false } = options;
  const stored = await deps.store.authorizations.getAuthorization(tenantId, id);
  if (!stored) throw new AuthorizationNotFound();
  const now = deps.clock.now();
  const current = effectiveAuthorization(stored, now);
  if (current.status !== 'HELD') {
    if (retry && alreadyDone(current, settlement)) return current;
    throw notHeld(current.status);
  }
  const change = settlement(current);
  const mandate = await mandateOf(deps, tenantId, stored.mandate_id);
  const events = capturing(eventsOf(deps, mandate, caller, extra));
  const outcome = await deps.store.authorizations.settle(tenantId, id, change, now, events.build);
  if (!outcome.settled) {
    if (!outcome.authorization) throw new AuthorizationNotFound();
    const found = effectiveAuthorization(outcome.authorization, now);
    if (retry && alreadyDone(found, settlement)) return found;
    throw notHeld(found.status);
  }
  await relay(deps, events.built);
  return outcome.authorization;
}

const notHeld = (status: AuthorizationStatus) =>
  new AppError('CONFLICT', `Authorization is ${status}; only a HELD authorization can be captured or voided`);

export function captureAuthorization(
  deps: TransitionDeps,
  tenantId: string,
  id: string,
  amount: number | undefined,
  caller?: CallerContext,
  retry = false,
): Promise<Authorization> {
  return settle(
    deps,
    tenantId,
    id,
    (a) => {
      if (amount !== undefined && amount > a.amount)
        throw badRequest(`amount must be at most the held amount (${a.amount})`);
      return { status: 'CAPTURED', captured_amount: amount ?? a.amount };
    },
    caller,
    { retry },
  );
}

export function voidAuthorization(
  deps: TransitionDeps,
  tenantId: string,
  id: string,
  caller?: CallerContext,
  reason?: string,
  retry = false,
): Promise<Authorization> {
  return settle(deps, tenantId, id, () => ({ status: 'VOIDED' }), caller, {
    extra: reason ? { reason } : undefined,
    retry,
  });
}

/** The sweeper's (and a refused hold's) expiry: true when this call expired it, emitting AUTHORIZATION_EXPIRED once. */
export async function expireAuthorization(
  deps: TransitionDeps,
  tenantId: string,
  id: string,
): Promise<boolean> {
  const stored = await deps.store.authorizations.getAuthorization(tenantId, id);
  if (!stored || stored.status !== 'HELD') return false;
  const mandate = await deps.store.get(tenantId, stored.mandate_id);
  if (!mandate) return false;
  const events = capturing(eventsOf(deps, mandate, undefined));
  const outcome = await deps.store.authorizations.settle(
    tenantId,
    id,
    { status: 'EXPIRED' },
    deps.clock.now(),
    events.build,
  );
  if (!outcome.settled) return false;
  await relay(deps, events.built);
  return true;
}

/** Revoking a mandate voids its HELD authorizations (reason mandate_revoked); how many. */
export async function voidHoldsOfRevoked(
  deps: TransitionDeps,
  tenantId: string,
  mandateId: string,
  caller?: CallerContext,
): Promise<number> {
  let voided = 0;
  for (;;) {
    const held = await deps.store.authorizations.heldAuthorizations(tenantId, mandateId, 100);
    let changed = 0;
    for (const a of held) {
      try {
        await voidAuthorization(deps, tenantId, a.id, caller, 'mandate_revoked');
        changed++;
      } catch (err) {
        // Captured, voided or expired meanwhile: nothing left to void.
        if (!(err instanceof AppError && err.status === 409)) throw err;
      }
    }
    voided += changed;
    if (held.length < 100 || changed === 0) return voided;
  }
}

export async function getAuthorization(
  deps: TransitionDeps,
  tenantId: string,
  id: string,
): Promise<Authorization> {
  const a = await deps.store.authorizations.getAuthorization(tenantId, id);
  if (!a) throw new AuthorizationNotFound();
  return effectiveAuthorization(a, deps.clock.now());
}

export async function listAuthorizations(
  deps: TransitionDeps,
  tenantId: string,
  mandateId: string,
  query: { status?: AuthorizationStatus; limit: number; afterId?: string },
): Promise<Authorization[]> {
  await mandateOf(deps, tenantId, mandateId);
  const now = deps.clock.now();
  const items = await deps.store.authorizations.listAuthorizations(tenantId, mandateId, { ...query, now });
  // A HELD one past expiry reads EXPIRED; under a status filter it goes with its effective status.
  return items
    .map((a) => effectiveAuthorization(a, now))
    .filter((a) => query.status === undefined || a.status === query.status);
}

export async function getBudget(
  deps: TransitionDeps,
  tenantId: string,
  mandateId: string,
): Promise<BudgetState> {
  const mandate = await mandateOf(deps, tenantId, mandateId);
  if (!mandate.scope.budget) throw new AppError('NOT_FOUND', 'Mandate has no budget');
  const period = currentPeriod(mandate, deps.clock.now());
  const totals = await deps.store.authorizations.periodTotals(tenantId, mandateId, period.start);
  return budgetState(mandate, period, totals)!;
}
