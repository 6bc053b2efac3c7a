import { SortedById, takeMatching, valueFor } from '@mandate/shared/core';
import { type MemoryOutbox } from '@mandate/shared/events';
import type { Authorization } from '../budget-contract';
import {
  NO_TOTALS,
  type AuthorizationStore,
  type EventsOf,
  type HoldOutcome,
  type ListAuthorizationsQuery,
  type PeriodRef,
  type PeriodTotals,
  type SettleOutcome,
  type Settlement,
} from './authorization-store';

const key = (...parts: string[]) => parts.join('\u0000');

/**
 * Embedded mode and tests: each operation is one synchronous step (no await between its check and
 * its write), the memory counterpart of the MongoDB adapter's conditional writes. Copies in and out.
 */
export class MemoryAuthorizations implements AuthorizationStore {
  private readonly byId = new Map<string, { tenantId: string; authorization: Authorization }>();
  /** Per (tenant, mandate): ids sorted, for lists newest first. */
  private readonly byMandate = new Map<string, SortedById<string>>();
  /** Per (tenant, request key): the hold it made. */
  private readonly byRequest = new Map<string, string>();
  private readonly periods = new Map<string, PeriodTotals>();
  private readonly held = new Map<string, Set<string>>();

  /** `outbox`: the mandate store's, so the relay publishes these events with the others. */
  constructor(private readonly outbox: MemoryOutbox) {}

  async hold(
    tenantId: string,
    authorization: Authorization,
    period: PeriodRef,
    requestKey: string | undefined,
    events: EventsOf,
  ): Promise<HoldOutcome> {
    const periodKey = key(tenantId, authorization.mandate_id, period.start);
    const totals = valueFor(this.periods, periodKey, () => ({ ...NO_TOTALS }));
    if (requestKey !== undefined) {
      const earlier = this.byRequest.get(key(tenantId, requestKey));
      if (earlier !== undefined) {
        const first = this.byId.get(earlier)!.authorization;
        const firstTotals = this.periods.get(key(tenantId, first.mandate_id, first.period_start))!;
        return {
          held: true,
          authorization: structuredClone(first),
          totals: { ...firstTotals },
          replayed: true,
        };
      }
    }
    if (period.limit !== null && totals.held + totals.captured + authorization.amount > period.limit) {
      return { held: false, totals: { ...totals } };
    }
    totals.held += authorization.amount;
    const stored = structuredClone(authorization);
    this.byId.set(key(tenantId, stored.id), { tenantId, authorization: stored });
    SortedById.idsUnder(this.byMandate, key(tenantId, stored.mandate_id)).insert(stored.id);
    valueFor(this.held, key(tenantId, stored.mandate_id), () => new Set()).add(stored.id);
    if (requestKey !== undefined) this.byRequest.set(key(tenantId, requestKey), key(tenantId, stored.id));
    this.outbox.add(`authorization:${tenantId}:${stored.id}`, events(structuredClone(stored), { ...totals }));
    return { held: true, authorization: structuredClone(stored), totals: { ...totals }, replayed: false };
  }

  async settle(
    tenantId: string,
    id: string,
    settlement: Settlement,
    now: Date,
    events: EventsOf,
  ): Promise<SettleOutcome> {
    const entry = this.byId.get(key(tenantId, id));
    if (!entry) return { settled: false, authorization: null };
    const current = entry.authorization;
    const due = Date.parse(current.expires_at) <= now.getTime();
    const allowed = current.status === 'HELD' && (settlement.status === 'EXPIRED' ? due : !due);
    const captured = settlement.status === 'CAPTURED' ? settlement.captured_amount : 0;
    if (!allowed || captured > current.amount) {
      return { settled: false, authorization: structuredClone(current) };
    }
    const totals = this.periods.get(key(tenantId, current.mandate_id, current.period_start))!;
    totals.held -= current.amount;
    totals.captured += captured;
    const updated: Authorization = {
      ...current,
      status: settlement.status,
      captured_amount: captured,
      updated_at: now.toISOString(),
    };
    entry.authorization = updated;
    this.held.get(key(tenantId, current.mandate_id))?.delete(id);
    this.outbox.add(`authorization:${tenantId}:${id}`, events(structuredClone(updated), { ...totals }));
    return { settled: true, authorization: structuredClone(updated), totals: { ...totals } };
  }

  async getAuthorization(tenantId: string, id: string): Promise<Authorization | null> {
    const entry = this.byId.get(key(tenantId, id));
    return entry ? structuredClone(entry.authorization) : null;
  }

  async listAuthorizations(
    tenantId: string,
    mandateId: string,
    query: ListAuthorizationsQuery,
  ): Promise<Authorization[]> {
    const ids = this.byMandate.get(key(tenantId, mandateId));
    if (!ids) return [];
    const items = (function* (byId: MemoryAuthorizations['byId']) {
      for (const id of ids.newestFirst(query.afterId)) yield byId.get(key(tenantId, id))!.authorization;
    })(this.byId);
    return takeMatching(
      items,
      (a) => query.status === undefined || a.status === query.status,
      query.limit + 1,
    ).map((a) => structuredClone(a));
  }

  async periodTotals(tenantId: string, mandateId: string, periodStart: string): Promise<PeriodTotals> {
    return { ...(this.periods.get(key(tenantId, mandateId, periodStart)) ?? NO_TOTALS) };
  }

  async findDueAuthorizations(now: Date, limit: number): Promise<{ tenant_id: string; id: string }[]> {
    const due: { tenant_id: string; id: string; expires_at: string }[] = [];
    for (const [mandateKey, ids] of this.held) {
      const tenantId = mandateKey.split('\u0000')[0]!;
      for (const id of ids) {
        const a = this.byId.get(key(tenantId, id))!.authorization;
        if (Date.parse(a.expires_at) <= now.getTime())
          due.push({ tenant_id: tenantId, id, expires_at: a.expires_at });
      }
    }
    due.sort((x, y) => Date.parse(x.expires_at) - Date.parse(y.expires_at));
    return due.slice(0, limit).map(({ tenant_id, id }) => ({ tenant_id, id }));
  }

  async heldAuthorizations(tenantId: string, mandateId: string, limit: number): Promise<Authorization[]> {
    const ids = [...(this.held.get(key(tenantId, mandateId)) ?? [])].slice(0, limit);
    return ids.map((id) => structuredClone(this.byId.get(key(tenantId, id))!.authorization));
  }
}
