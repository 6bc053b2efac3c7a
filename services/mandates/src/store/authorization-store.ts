import type { AuditEvent } from '@mandate/shared/events';
import type { Authorization, AuthorizationStatus } from '../budget-contract';

/** Held and captured minor units of one budget period (docs/API.md#budgets): maintained, never summed at read time. */
export interface PeriodTotals {
  held: number;
  captured: number;
}

/** The budget period a hold counts in: its start (the key) and the budget amount, null without a budget. */
export interface PeriodRef {
  start: string;
  limit: number | null;
}

/** The events of a change, built once the totals after it are known (they carry them). */
export type EventsOf = (authorization: Authorization, totals: PeriodTotals) => AuditEvent[];

export type HoldOutcome =
  /** `replayed`: the request key named an earlier hold, answered as it was (nothing held twice). */
  | { held: true; authorization: Authorization; totals: PeriodTotals; replayed: boolean }
  /** The amount did not fit: nothing was written. */
  | { held: false; totals: PeriodTotals };

export type Settlement =
  { status: 'CAPTURED'; captured_amount: number } | { status: 'VOIDED' } | { status: 'EXPIRED' };

export type SettleOutcome =
  | { settled: true; authorization: Authorization; totals: PeriodTotals }
  /** Not settled: absent (null), or no longer HELD, or (for capture and void) past its expiry. */
  | { settled: false; authorization: Authorization | null };

export interface ListAuthorizationsQuery {
  /** As stored: the caller maps HELD past expiry to EXPIRED. */
  status?: AuthorizationStatus;
  limit: number;
  afterId?: string;
  now: Date;
}

/**
 * Spend authorizations and their budget periods (docs/API.md#budgets). Every function takes the
 * tenant first. The rules every adapter keeps, each in one atomic conditional write:
 *
 * - a hold is recorded only if `captured + held + amount <= limit` in its period at that moment;
 *   a refused hold changes nothing;
 * - a hold, a capture, a void or an expiry changes the period's totals exactly once, whoever
 *   retries it (the request key of a hold; the HELD status of a settlement);
 * - each change's events are stored with it (the outbox), carrying the totals after it.
 */
export interface AuthorizationStore {
  /**
   * Holds `authorization.amount` in `period` if it fits. With `requestKey`, a second hold with the
   * same key (a retry after a crash at any point) gets the first one back, counted once.
   */
  hold(
    tenantId: string,
    authorization: Authorization,
    period: PeriodRef,
    requestKey: string | undefined,
    events: EventsOf,
  ): Promise<HoldOutcome>;
  /**
   * HELD → `settlement.status`, releasing the hold (a capture keeps `captured_amount` as captured).
   * CAPTURED and VOIDED only before `expires_at`, EXPIRED only from it on.
   */
  settle(
    tenantId: string,
    id: string,
    settlement: Settlement,
    now: Date,
    events: EventsOf,
  ): Promise<SettleOutcome>;
  getAuthorization(tenantId: string, id: string): Promise<Authorization | null>;
  /** A mandate's authorizations newest first, up to `limit + 1`. */
  listAuthorizations(
    tenantId: string,
    mandateId: string,
    query: ListAuthorizationsQuery,
  ): Promise<Authorization[]>;
  periodTotals(tenantId: string, mandateId: string, periodStart: string): Promise<PeriodTotals>;
  /** For the sweeper, across tenants: HELD authorizations with expires_at <= now, soonest first. */
  findDueAuthorizations(now: Date, limit: number): Promise<{ tenant_id: string; id: string }[]>;
  /** A mandate's HELD authorizations (revoking it voids them), up to `limit`. */
  heldAuthorizations(tenantId: string, mandateId: string, limit: number): Promise<Authorization[]>;
}

export const NO_TOTALS: PeriodTotals = { held: 0, captured: 0 };
