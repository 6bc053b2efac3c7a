import { Schema, type Connection, type FilterQuery, type Model } from 'mongoose';
import {
  WITHOUT_OUTBOX,
  isDuplicateKeyError,
  outboxQueryShapes,
  pageBefore,
  pushOutbox,
  queryShapesOf,
  type MongoQueryShape,
  type StoredAs,
} from '@mandate/shared/data';
import { AUTHORIZATION_STATUSES, type Authorization } from '../budget-contract';
import type {
  AuthorizationStore,
  EventsOf,
  HoldOutcome,
  ListAuthorizationsQuery,
  PeriodRef,
  PeriodTotals,
  SettleOutcome,
  Settlement,
} from './authorization-store';

/**
 * MongoDB adapter of the authorization store (docs/DECISIONS.md "Budgets: one conditional write").
 *
 * A period's totals live in one document per (tenant, mandate, period start), with `available`
 * (the budget amount − held − captured) and a map `holds` of the period's HELD authorizations.
 * The one write that decides a hold is a findOneAndUpdate filtered on `available >= amount` and
 * `holds.<id>` absent, which $inc's the totals and sets `holds.<id>`: two holds can never both
 * take the last of a budget, and no hold is counted twice. Releasing one is the same kind of write,
 * filtered on `holds.<id>` present. No lock, no read-then-write, any number of replicas.
 *
 * The authorization document says what is to be done before the period changes, so a crash
 * between the two writes is finished by whoever comes next (a retry, the sweeper): a hold is
 * inserted PENDING first (its request key unique), a settlement is claimed as `settling` first.
 */

type AuthorizationDoc = StoredAs<
  Omit<Authorization, 'status'>,
  'expires_at' | 'created_at' | 'updated_at'
> & {
  tenant_id: string;
  /** PENDING: inserted, the period not yet known to hold it (never served). */
  status: Authorization['status'] | 'PENDING';
  request_key?: string;
  /** A settlement claimed but not yet written to the period and here. */
  settling?: { status: Settlement['status']; captured_amount: number; at: Date };
};

interface PeriodDoc {
  tenant_id: string;
  mandate_id: string;
  period_start: string;
  /** The budget amount; null without a budget (no limit, `available` unused). */
  limit: number | null;
  available: number;
  held: number;
  captured: number;
  /** HELD authorizations of the period: id → amount. */
  holds: Record<string, number>;
}

export const authorizationSchema = new Schema<AuthorizationDoc>(
  {
    id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    mandate_id: { type: String, required: true },
    action: { type: String, required: true },
    resource: { type: String, default: null },
    amount: { type: Number, required: true },
    currency: { type: String, required: true },
    status: { type: String, required: true },
    captured_amount: { type: Number, required: true },
    period_start: { type: String, required: true },
    expires_at: { type: Date, required: true },
    created_at: { type: Date, required: true },
    updated_at: { type: Date, required: true },
    request_key: { type: String, default: undefined },
    settling: { type: Schema.Types.Mixed, default: undefined },
    outbox: { type: [Schema.Types.Mixed], default: undefined },
  },
  { collection: 'authorizations', versionKey: false, minimize: false, id: false },
);
// get, settle: { tenant_id, id } (status, expires_at, settling checked on the one found).
authorizationSchema.index({ tenant_id: 1, id: 1 }, { unique: true });
// A retried hold finds the first by its request key: unique, so two concurrent retries insert one.
authorizationSchema.index(
  { tenant_id: 1, request_key: 1 },
  { unique: true, partialFilterExpression: { request_key: { $type: 'string' } } },
);
// list: { tenant_id, mandate_id, id < cursor } sorted { id: -1 } (status checked on the documents found);
// list?status=…, held: { tenant_id, mandate_id, status, id < cursor } sorted { id: -1 }.
authorizationSchema.index({ tenant_id: 1, mandate_id: 1, id: -1 });
authorizationSchema.index({ tenant_id: 1, mandate_id: 1, status: 1, id: -1 });
// findDue, the sweeper across tenants: { status: HELD|PENDING, expires_at <= now } sorted { expires_at: 1 }.
authorizationSchema.index({ status: 1, expires_at: 1 });
authorizationSchema.index({ 'outbox.id': 1 });

export const budgetPeriodSchema = new Schema<PeriodDoc>(
  {
    tenant_id: { type: String, required: true },
    mandate_id: { type: String, required: true },
    period_start: { type: String, required: true },
    limit: { type: Number, default: null },
    available: { type: Number, required: true },
    held: { type: Number, required: true },
    captured: { type: Number, required: true },
    holds: { type: Schema.Types.Mixed, default: {} },
  },
  { collection: 'budget_periods', versionKey: false, minimize: false, id: false },
);
// Every period query: { tenant_id, mandate_id, period_start } (available, holds.<id> checked on the one
// found); unique, so two replicas opening the same period create one document.
budgetPeriodSchema.index({ tenant_id: 1, mandate_id: 1, period_start: 1 }, { unique: true });

const shapes = queryShapesOf('authorizations', 'id');
const periodShapes = queryShapesOf('budget_periods');

/** Every query this adapter runs, for the index-coverage test. */
export const AUTHORIZATION_QUERY_SHAPES: MongoQueryShape[] = [
  shapes.find('getAuthorization, settle', ['tenant_id', 'id'], {
    residual: ['status', 'expires_at', 'settling', 'amount'],
  }),
  shapes.find('hold: by request key', ['tenant_id', 'request_key']),
  shapes.page('listAuthorizations', ['tenant_id', 'mandate_id'], { residual: ['status'] }),
  shapes.page('listAuthorizations?status=, heldAuthorizations', ['tenant_id', 'mandate_id', 'status']),
  shapes.find('findDueAuthorizations', ['status'], { sort: { expires_at: 1 } }),
  ...outboxQueryShapes('authorizations'),
  periodShapes.find('hold, settle, periodTotals', ['tenant_id', 'mandate_id', 'period_start'], {
    residual: ['available', 'holds'],
  }),
];

/** How long a settlement claimed by another caller is waited for before it is taken as crashed (about 2 s). */
const SETTLING_POLLS = 40;
const SETTLING_POLL_MS = 50;

const SERVED = { status: { $in: [...AUTHORIZATION_STATUSES] } };
const TOTALS = { _id: 0, held: 1, captured: 1 } as const;
const totalsOf = (d: Pick<PeriodDoc, 'held' | 'captured'>): PeriodTotals => ({
  held: d.held,
  captured: d.captured,
});

export class MongoAuthorizations implements AuthorizationStore {
  private constructor(
    readonly model: Model<AuthorizationDoc>,
    readonly periods: Model<PeriodDoc>,
  ) {}

  static async create(connection: Connection): Promise<MongoAuthorizations> {
    const model = connection.model<AuthorizationDoc>('Authorization', authorizationSchema);
    const periods = connection.model<PeriodDoc>('BudgetPeriod', budgetPeriodSchema);
    await model.init();
    await periods.init();
    return new MongoAuthorizations(model, periods);
  }

  async hold(
    tenantId: string,
    authorization: Authorization,
    period: PeriodRef,
    requestKey: string | undefined,
    events: EventsOf,
  ): Promise<HoldOutcome> {
    let doc: AuthorizationDoc | null = null;
    if (requestKey !== undefined) {
      doc = await this.model
        .findOne({ tenant_id: tenantId, request_key: requestKey }, WITHOUT_OUTBOX)
        .lean<AuthorizationDoc>();
    }
    if (!doc) {
      const fresh = {
        ...toDoc(tenantId, authorization),
        status: 'PENDING' as const,
        ...(requestKey !== undefined ? { request_key: requestKey } : {}),
      };
      try {
        await this.model.create(fresh);
        doc = fresh;
      } catch (err) {
        // A concurrent retry with the same key inserted first: carry on with its document.
        if (!isDuplicateKeyError(err) || requestKey === undefined) throw err;
        doc = await this.model
          .findOne({ tenant_id: tenantId, request_key: requestKey }, WITHOUT_OUTBOX)
          .lean<AuthorizationDoc>();
        if (!doc) throw err;
      }
    } else if (doc.status !== 'PENDING') {
      const first = fromDoc(doc);
      const totals = await this.periodTotals(tenantId, first.mandate_id, first.period_start);
      return { held: true, authorization: first, totals, replayed: true };
    }
    const replayed = doc.id !== authorization.id;
    const pending = fromDoc({ ...doc, status: 'HELD' });
    const totals = await this.applyHold(
      tenantId,
      pending,
      replayed ? await this.limitOf(tenantId, pending, period) : period,
    );
    if (!totals) {
      // Did not fit: nothing is held, and the PENDING document goes (a retry decides anew).
      await this.model.deleteOne({ tenant_id: tenantId, id: pending.id, status: 'PENDING' });
      return {
        held: false,
        totals: await this.periodTotals(tenantId, pending.mandate_id, pending.period_start),
      };
    }
    const held = await this.model
      .findOneAndUpdate(
        { tenant_id: tenantId, id: pending.id, status: 'PENDING' },
        { $set: { status: 'HELD' }, ...pushOutbox(events(pending, totals)) },
        { returnDocument: 'after', projection: WITHOUT_OUTBOX },
      )
      .lean<AuthorizationDoc>();
    // Null: a concurrent retry finished it first; it stored the events.
    return { held: true, authorization: held ? fromDoc(held) : pending, totals, replayed };
  }

  /** The period of a recovered PENDING hold is its own (the first request's), with the budget of now. */
  private async limitOf(tenantId: string, a: Authorization, period: PeriodRef): Promise<PeriodRef> {
    const doc = await this.periods
      .findOne({ tenant_id: tenantId, mandate_id: a.mandate_id, period_start: a.period_start }, { limit: 1 })
      .lean<Pick<PeriodDoc, 'limit'>>();
    return { start: a.period_start, limit: doc ? doc.limit : period.limit };
  }

  /** The one conditional write: the totals after the hold, or null when it does not fit. */
  private async applyHold(
    tenantId: string,
    a: Authorization,
    period: PeriodRef,
  ): Promise<PeriodTotals | null> {
    const where = { tenant_id: tenantId, mandate_id: a.mandate_id, period_start: a.period_start };
    const slot = `holds.${a.id}`;
    for (let attempt = 0; attempt < 5; attempt++) {
      const after = await this.periods
        .findOneAndUpdate(
          {
            ...where,
            [slot]: { $exists: false },
            ...(period.limit !== null ? { available: { $gte: a.amount } } : {}),
          },
          { $inc: { held: a.amount, available: -a.amount }, $set: { [slot]: a.amount } },
          { returnDocument: 'after', projection: TOTALS },
        )
        .lean<PeriodDoc>();
      if (after) return totalsOf(after);
      const current = await this.periods
        .findOne(where, { _id: 0, held: 1, captured: 1, available: 1, [slot]: 1 })
        .lean<PeriodDoc>();
      if (current) {
        // Already counted (a retry after a crash between the two writes).
        if (current.holds?.[a.id] !== undefined) return totalsOf(current);
        // The update missed because the hold did not fit, or because the period was opened by a
        // concurrent hold after the update looked: only the first refuses, the second tries again.
        if (period.limit !== null && current.available < a.amount) return null;
        continue;
      }
      try {
        await this.periods.create({
          ...where,
          limit: period.limit,
          available: period.limit ?? 0,
          held: 0,
          captured: 0,
          holds: {},
        });
      } catch (err) {
        // Another replica opened the period first: use that one.
        if (!isDuplicateKeyError(err)) throw err;
      }
    }
    throw new Error('budget period could not be opened');
  }

  async settle(
    tenantId: string,
    id: string,
    settlement: Settlement,
    now: Date,
    events: EventsOf,
  ): Promise<SettleOutcome> {
    const captured = settlement.status === 'CAPTURED' ? settlement.captured_amount : 0;
    const claimed = await this.model
      .findOneAndUpdate(
        {
          tenant_id: tenantId,
          id,
          status: 'HELD',
          settling: { $exists: false },
          amount: { $gte: captured },
          expires_at: settlement.status === 'EXPIRED' ? { $lte: now } : { $gt: now },
        },
        { $set: { settling: { status: settlement.status, captured_amount: captured, at: now } } },
        { returnDocument: 'after', projection: WITHOUT_OUTBOX },
      )
      .lean<AuthorizationDoc>();
    if (claimed) return this.finish(tenantId, claimed, events);
    const doc = await this.model
      .findOne({ tenant_id: tenantId, id, ...SERVED }, WITHOUT_OUTBOX)
      .lean<AuthorizationDoc>();
    if (!doc) return { settled: false, authorization: null };
    if (doc.settling && doc.status === 'HELD')
      return this.settlingElsewhere(tenantId, doc, settlement, captured, events);
    return { settled: false, authorization: fromDoc(doc) };
  }

  /**
   * Another caller claimed a settlement: it is finishing it (wait for it, then answer what it
   * became), or it crashed after claiming (finish it; it is this request's own if it asks the same,
   * a retry, and answered as settled).
   */
  private async settlingElsewhere(
    tenantId: string,
    doc: AuthorizationDoc,
    settlement: Settlement,
    captured: number,
    events: EventsOf,
  ): Promise<SettleOutcome> {
    for (let i = 0; i < SETTLING_POLLS; i++) {
      await new Promise((resolve) => setTimeout(resolve, SETTLING_POLL_MS));
      const now = await this.model
        .findOne({ tenant_id: tenantId, id: doc.id }, WITHOUT_OUTBOX)
        .lean<AuthorizationDoc>();
      if (!now?.settling) return { settled: false, authorization: now ? fromDoc(now) : null };
    }
    const finished = await this.finish(tenantId, doc, events);
    const same = doc.settling!.status === settlement.status && doc.settling!.captured_amount === captured;
    return same ? finished : { settled: false, authorization: finished.authorization };
  }

  /** Releases the hold in its period (once: filtered on holds.<id>), then records the settlement here. */
  private async finish(
    tenantId: string,
    doc: AuthorizationDoc,
    events: EventsOf,
  ): Promise<SettleOutcome & { settled: true }> {
    const settling = doc.settling!;
    const where = { tenant_id: tenantId, mandate_id: doc.mandate_id, period_start: doc.period_start };
    const slot = `holds.${doc.id}`;
    const released = await this.periods
      .findOneAndUpdate(
        { ...where, [slot]: { $exists: true } },
        {
          $unset: { [slot]: 1 },
          $inc: {
            held: -doc.amount,
            captured: settling.captured_amount,
            available: doc.amount - settling.captured_amount,
          },
        },
        { returnDocument: 'after', projection: TOTALS },
      )
      .lean<PeriodDoc>();
    const totals = released
      ? totalsOf(released)
      : await this.periodTotals(tenantId, doc.mandate_id, doc.period_start);
    const updatedAt = new Date(settling.at);
    const settled = fromDoc({
      ...doc,
      status: settling.status,
      captured_amount: settling.captured_amount,
      updated_at: updatedAt,
    });
    const after = await this.model
      .findOneAndUpdate(
        { tenant_id: tenantId, id: doc.id, settling: { $exists: true } },
        {
          $set: { status: settling.status, captured_amount: settling.captured_amount, updated_at: updatedAt },
          $unset: { settling: 1 },
          ...pushOutbox(events(settled, totals)),
        },
        { returnDocument: 'after', projection: WITHOUT_OUTBOX },
      )
      .lean<AuthorizationDoc>();
    return { settled: true, authorization: after ? fromDoc(after) : settled, totals };
  }

  async getAuthorization(tenantId: string, id: string): Promise<Authorization | null> {
    const doc = await this.model
      .findOne({ tenant_id: tenantId, id, ...SERVED }, WITHOUT_OUTBOX)
      .lean<AuthorizationDoc>();
    return doc ? fromDoc(doc) : null;
  }

  async listAuthorizations(
    tenantId: string,
    mandateId: string,
    query: ListAuthorizationsQuery,
  ): Promise<Authorization[]> {
    const filter: FilterQuery<AuthorizationDoc> = {
      tenant_id: tenantId,
      mandate_id: mandateId,
      ...(query.status !== undefined ? { status: query.status } : SERVED),
    };
    const docs = await pageBefore(this.model, {
      filter,
      key: 'id',
      before: query.afterId,
      limit: query.limit + 1,
      projection: WITHOUT_OUTBOX,
    });
    return docs.map(fromDoc);
  }

  async periodTotals(tenantId: string, mandateId: string, periodStart: string): Promise<PeriodTotals> {
    const doc = await this.periods
      .findOne({ tenant_id: tenantId, mandate_id: mandateId, period_start: periodStart }, TOTALS)
      .lean<PeriodDoc>();
    return doc ? totalsOf(doc) : { held: 0, captured: 0 };
  }

  async findDueAuthorizations(now: Date, limit: number): Promise<{ tenant_id: string; id: string }[]> {
    // A PENDING hold past its expiry was never answered (its request crashed and was not
    // retried): whatever it counted is released and it goes, without an event (nobody saw it).
    const stale = await this.model
      .find({ status: 'PENDING', expires_at: { $lte: now } }, WITHOUT_OUTBOX)
      .sort({ expires_at: 1 })
      .limit(limit)
      .lean<AuthorizationDoc[]>();
    for (const doc of stale) {
      await this.periods.updateOne(
        {
          tenant_id: doc.tenant_id,
          mandate_id: doc.mandate_id,
          period_start: doc.period_start,
          [`holds.${doc.id}`]: { $exists: true },
        },
        { $unset: { [`holds.${doc.id}`]: 1 }, $inc: { held: -doc.amount, available: doc.amount } },
      );
      await this.model.deleteOne({ tenant_id: doc.tenant_id, id: doc.id, status: 'PENDING' });
    }
    const due = await this.model
      .find({ status: 'HELD', expires_at: { $lte: now } }, { _id: 0, tenant_id: 1, id: 1 })
      .sort({ expires_at: 1 })
      .limit(limit)
      .lean<Pick<AuthorizationDoc, 'tenant_id' | 'id'>[]>();
    return due.map((d) => ({ tenant_id: d.tenant_id, id: d.id }));
  }

  async heldAuthorizations(tenantId: string, mandateId: string, limit: number): Promise<Authorization[]> {
    const docs = await this.model
      .find({ tenant_id: tenantId, mandate_id: mandateId, status: 'HELD' }, WITHOUT_OUTBOX)
      .sort({ id: -1 })
      .limit(limit)
      .lean<AuthorizationDoc[]>();
    return docs.map(fromDoc);
  }
}

function toDoc(tenantId: string, a: Authorization): AuthorizationDoc {
  return {
    ...a,
    tenant_id: tenantId,
    expires_at: new Date(a.expires_at),
    created_at: new Date(a.created_at),
    updated_at: new Date(a.updated_at),
  };
}

/** Exactly the API's fields: nothing of MongoDB's, nor the request key, leaks out. */
function fromDoc(d: AuthorizationDoc): Authorization {
  const iso = (v: Date | string) => new Date(v).toISOString();
  return {
    id: d.id,
    mandate_id: d.mandate_id,
    action: d.action,
    resource: d.resource ?? null,
    amount: d.amount,
    currency: d.currency,
    status: d.status === 'PENDING' ? 'HELD' : d.status,
    captured_amount: d.captured_amount,
    period_start: d.period_start,
    expires_at: iso(d.expires_at),
    created_at: iso(d.created_at),
    updated_at: iso(d.updated_at),
  };
}
