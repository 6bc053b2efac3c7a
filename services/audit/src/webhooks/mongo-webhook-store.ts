import { randomUUID } from 'node:crypto';
import { Schema, type Connection, type Model, type PipelineStage } from 'mongoose';
import { type AuditEvent } from '@mandate/shared/events';
import {
  isDuplicateKeyError,
  markOutboxSent,
  outboxQueryShapes,
  pageBefore,
  pendingOutboxEvents,
  pingMongo,
  pushOutbox,
  queryShapesOf,
  withOutbox,
  type MongoQueryShape,
  type OutboxDoc,
} from '@mandate/shared/data';
import type { WebhookDeliveryStatus } from '../contract';
import type { ClaimedDelivery, WebhookAttempt, WebhookDelivery, WebhookEndpoint } from './webhook';
import {
  DEFAULT_DELIVERY_RETENTION_MS,
  MAX_STORED_ATTEMPTS,
  deliveryExpiry,
  type AttemptCounts,
  type AttemptOutcome,
  type DeliveryKey,
  type DeliveryLease,
  type DeliveryPageQuery,
  type EndpointChanges,
  type EndpointRead,
  type PageQuery,
  type WebhookStore,
} from './webhook-store';

/** The endpoint as stored: its instants as dates, its outbox, and the tombstone's fields. */
interface EndpointDoc
  extends
    OutboxDoc,
    Omit<WebhookEndpoint, 'id' | 'failing_since' | 'secrets' | 'slot' | 'created_at' | 'updated_at'> {
  _id: string;
  failing_since: Date | null;
  secrets: { sealed: string; expires_at: Date | null }[];
  /** null once deleted, which frees the slot. */
  slot: number | null;
  /** A deleted endpoint stays as a tombstone (no secrets) until the relay has published its last events. */
  deleted: boolean;
  created_at: Date;
  updated_at: Date;
}

/** The delivery as stored: its instants as dates, and the lease. */
interface DeliveryDoc extends Omit<
  WebhookDelivery,
  'id' | 'attempts' | 'next_attempt_at' | 'created_at' | 'updated_at'
> {
  _id: string;
  attempts: (Omit<WebhookAttempt, 'attempted_at'> & { attempted_at: Date })[];
  next_attempt_at: Date | null;
  /** The end of the current lease; the epoch when none. */
  lease_until: Date;
  lease_token: string | null;
  created_at: Date;
  updated_at: Date;
  /** Set when the delivery finishes: MongoDB's TTL monitor removes it after this instant. */
  expires_at: Date | null;
}

const outboxField = { type: [Schema.Types.Mixed], default: undefined };

export const webhookEndpointSchema = new Schema<EndpointDoc>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    url: { type: String, required: true },
    description: { type: String, default: null },
    event_types: { type: [String], required: true },
    status: { type: String, required: true },
    disabled_reason: { type: String, default: null },
    failing_since: { type: Date, default: null },
    secrets: {
      type: [new Schema({ sealed: String, expires_at: { type: Date, default: null } }, { _id: false })],
      required: true,
    },
    slot: { type: Number, default: null },
    deleted: { type: Boolean, default: false },
    version: { type: Number, required: true },
    created_at: { type: Date, required: true },
    updated_at: { type: Date, required: true },
    outbox: outboxField,
  },
  { collection: 'webhook_endpoints', versionKey: false, minimize: false },
);
// insertEndpoint: the per-tenant limit, as one slot per live endpoint (a second create of a slot is refused);
// usedSlots: { tenant_id, deleted: false }.
webhookEndpointSchema.index(
  { tenant_id: 1, slot: 1 },
  { unique: true, partialFilterExpression: { deleted: false } },
);
// listEndpoints: { tenant_id, _id < cursor } sorted { _id: -1 }, tombstones filtered.
webhookEndpointSchema.index({ tenant_id: 1, _id: -1 });
// enabledEndpoints (the fan-out, once per tenant and batch): { tenant_id, status: 'ENABLED' }.
webhookEndpointSchema.index({ tenant_id: 1, status: 1 });
// The relay's query ({ 'outbox.id': { $gt: '' } }) and markSent's $in.
webhookEndpointSchema.index({ 'outbox.id': 1 });
// markSent's sweep of tombstones whose events are all out: { deleted: true } (few: deleted, not yet relayed).
webhookEndpointSchema.index({ deleted: 1 });

export const webhookDeliverySchema = new Schema<DeliveryDoc>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    endpoint_id: { type: String, required: true },
    event_id: { type: String, required: true },
    event_type: { type: String, required: true },
    payload: { type: String, required: true },
    status: { type: String, required: true },
    attempts: { type: [new Schema({}, { _id: false, strict: false })], default: [] },
    scheduled_attempts: { type: Number, default: 0 },
    next_attempt_at: { type: Date, default: null },
    lease_until: { type: Date, required: true },
    lease_token: { type: String, default: null },
    created_at: { type: Date, required: true },
    updated_at: { type: Date, required: true },
    expires_at: { type: Date, default: null },
  },
  { collection: 'webhook_deliveries', versionKey: false, minimize: false },
);
// insertDeliveries: one delivery per (endpoint, event), so a redelivered event adds nothing.
webhookDeliverySchema.index({ endpoint_id: 1, event_id: 1 }, { unique: true });
// listDeliveries: { tenant_id, endpoint_id, _id < cursor } sorted { _id: -1 }.
webhookDeliverySchema.index({ tenant_id: 1, endpoint_id: 1, _id: -1 });
// listDeliveries?status=: the same with the status. Both also serve order=asc (walked the other way)
// and include_total's countDocuments, which reads every key of the endpoint (and status).
webhookDeliverySchema.index({ tenant_id: 1, endpoint_id: 1, status: 1, _id: -1 });
// attemptCounts: { tenant_id, endpoint_id, updated_at >= the oldest window } (a delivery attempted
// in a window was updated at or after that attempt); failedSince: the status index above serves it.
webhookDeliverySchema.index({ tenant_id: 1, endpoint_id: 1, updated_at: 1 });
// claimDue: { status: 'PENDING', next_attempt_at <= now } (lease_until checked on the few found); backlog's count.
webhookDeliverySchema.index({ status: 1, next_attempt_at: 1 });
// backlog: the oldest PENDING delivery, { status: 'PENDING' } sorted { created_at: 1 }.
webhookDeliverySchema.index({ status: 1, created_at: 1 });
// Retention: the TTL monitor removes a finished delivery once expires_at has passed (PENDING ones hold null).
webhookDeliverySchema.index({ expires_at: 1 }, { expireAfterSeconds: 0 });
// claimDue's read-back of what its updateMany leased: { lease_token }.
webhookDeliverySchema.index({ lease_token: 1 }, { sparse: true });

/** An endpoint's deliveries, of one status if given: the same filter for a list's pages and its count. */
const deliveriesFilter = (
  tenantId: string,
  endpointId: string,
  status: WebhookDeliveryStatus | undefined,
) => ({
  tenant_id: tenantId,
  endpoint_id: endpointId,
  ...(status ? { status } : {}),
});

const endpoints = queryShapesOf('webhook_endpoints', '_id');
const deliveries = queryShapesOf('webhook_deliveries', '_id');

/** Every query this adapter runs, for the index-coverage test. */
export const WEBHOOK_QUERY_SHAPES: MongoQueryShape[] = [
  endpoints.find('insertEndpoint (a taken slot is a duplicate key)', ['tenant_id', 'slot', 'deleted']),
  endpoints.find('usedSlots', ['tenant_id'], { residual: ['deleted'] }),
  endpoints.find('getEndpoint / updateEndpoint / deleteEndpoint', ['_id'], {
    residual: ['tenant_id', 'deleted', 'version'],
  }),
  endpoints.page('listEndpoints', ['tenant_id'], { residual: ['deleted'] }),
  endpoints.find('enabledEndpoints', ['tenant_id', 'status'], { residual: ['deleted'] }),
  endpoints.find('endpointsByIds', ['_id'], { residual: ['deleted'] }),
  endpoints.find('subscribedTypes (each connect of the webhook queue)', ['deleted']),
  ...outboxQueryShapes('webhook_endpoints'),
  endpoints.find('markSent (tombstones relayed)', ['deleted'], { residual: ['outbox.id'] }),
  deliveries.find('insertDeliveries (a repeated endpoint and event is a duplicate key)', [
    'endpoint_id',
    'event_id',
  ]),
  deliveries.find('getDelivery / claimOne', ['_id'], {
    residual: ['tenant_id', 'endpoint_id', 'lease_until'],
  }),
  deliveries.page('listDeliveries', ['tenant_id', 'endpoint_id']),
  deliveries.page('listDeliveries?status=', ['tenant_id', 'endpoint_id', 'status']),
  deliveries.find('countDeliveries', ['tenant_id', 'endpoint_id']),
  deliveries.find('countDeliveries?status=', ['tenant_id', 'endpoint_id', 'status']),
  deliveries.find('attemptCounts', ['tenant_id', 'endpoint_id'], { range: ['updated_at'] }),
  deliveries.find('failedSince', ['tenant_id', 'endpoint_id', 'status'], {
    residual: ['created_at'],
    sort: { _id: 1 },
  }),
  deliveries.find('requeueFailed', ['_id'], {
    residual: ['tenant_id', 'endpoint_id', 'status', 'lease_until'],
  }),
  deliveries.find('claimDue (due)', ['status'], { range: ['next_attempt_at'], residual: ['lease_until'] }),
  deliveries.find('claimDue (lease the ids found)', ['_id'], { residual: ['status', 'lease_until'] }),
  deliveries.find('claimDue (read back the leased)', ['lease_token']),
  deliveries.find('finishAttempt', ['_id'], { residual: ['lease_token'] }),
  deliveries.find('backlog (count)', ['status']),
  deliveries.find('backlog (oldest)', ['status'], { sort: { created_at: 1 } }),
];

const iso = (d: Date | null | undefined) => (d ? new Date(d).toISOString() : null);
const EPOCH = new Date(0);
const dateOrNull = (ms: number | null) => (ms === null ? null : new Date(ms));

function endpointOut(doc: EndpointDoc): WebhookEndpoint {
  return {
    id: doc._id,
    tenant_id: doc.tenant_id,
    url: doc.url,
    description: doc.description ?? null,
    event_types: [...doc.event_types],
    status: doc.status,
    disabled_reason: doc.disabled_reason ?? null,
    failing_since: iso(doc.failing_since),
    secrets: doc.secrets.map((s) => ({ sealed: s.sealed, expires_at: iso(s.expires_at) })),
    slot: doc.slot ?? -1,
    version: doc.version,
    created_at: iso(doc.created_at)!,
    updated_at: iso(doc.updated_at)!,
  };
}

function changesIn(changes: EndpointChanges): Partial<EndpointDoc> {
  const out: Partial<EndpointDoc> = {};
  for (const [key, value] of Object.entries(changes)) {
    if (key === 'failing_since') out.failing_since = value === null ? null : new Date(value as string);
    else if (key === 'secrets')
      out.secrets = (value as WebhookEndpoint['secrets']).map((s) => ({
        sealed: s.sealed,
        expires_at: s.expires_at === null ? null : new Date(s.expires_at),
      }));
    else (out as Record<string, unknown>)[key] = value;
  }
  return out;
}

function deliveryIn({ id, ...d }: WebhookDelivery): DeliveryDoc {
  return {
    ...d,
    _id: id,
    attempts: d.attempts.map((a) => ({ ...a, attempted_at: new Date(a.attempted_at) })),
    next_attempt_at: d.next_attempt_at === null ? null : new Date(d.next_attempt_at),
    lease_until: EPOCH,
    lease_token: null,
    created_at: new Date(d.created_at),
    updated_at: new Date(d.updated_at),
    expires_at: null, // deliveries are created PENDING
  };
}

function deliveryOut(doc: DeliveryDoc): WebhookDelivery {
  return {
    id: doc._id,
    tenant_id: doc.tenant_id,
    endpoint_id: doc.endpoint_id,
    event_id: doc.event_id,
    event_type: doc.event_type,
    payload: doc.payload,
    status: doc.status,
    attempts: (doc.attempts ?? []).map((a) => ({
      attempted_at: iso(a.attempted_at)!,
      status_code: a.status_code ?? null,
      error: a.error ?? null,
      duration_ms: a.duration_ms,
      response_body: a.response_body ?? null,
      manual: a.manual === true,
    })),
    scheduled_attempts: doc.scheduled_attempts ?? 0,
    next_attempt_at: iso(doc.next_attempt_at),
    created_at: iso(doc.created_at)!,
    updated_at: iso(doc.updated_at)!,
  };
}

/** The filter of a write guarded by the endpoint as read (a tombstone is never as read). */
const unchanged = (read: EndpointRead) => ({
  _id: read.id,
  tenant_id: read.tenant_id,
  deleted: false,
  version: read.version,
});

const claimed = (doc: DeliveryDoc): ClaimedDelivery => ({
  ...deliveryOut(doc),
  lease_token: doc.lease_token!,
});

export class MongoWebhookStore implements WebhookStore {
  readonly kind = 'mongo' as const;
  private readonly endpoints: Model<EndpointDoc>;
  private readonly deliveries: Model<DeliveryDoc>;

  constructor(
    private readonly connection: Connection,
    private readonly deliveryRetentionMs = DEFAULT_DELIVERY_RETENTION_MS,
  ) {
    this.endpoints = connection.model<EndpointDoc>('WebhookEndpoint', webhookEndpointSchema);
    this.deliveries = connection.model<DeliveryDoc>('WebhookDelivery', webhookDeliverySchema);
  }

  async init(): Promise<void> {
    await this.endpoints.createIndexes();
    await this.deliveries.createIndexes();
  }

  ping(): Promise<void> {
    return pingMongo(this.connection);
  }

  async insertEndpoint(endpoint: WebhookEndpoint, events: AuditEvent[]): Promise<boolean> {
    const { id, ...rest } = endpoint;
    try {
      await this.endpoints.create({
        ...rest,
        ...changesIn({ failing_since: rest.failing_since, secrets: rest.secrets }),
        _id: id,
        deleted: false,
        created_at: new Date(rest.created_at),
        updated_at: new Date(rest.updated_at),
        ...withOutbox(events),
      });
      return true;
    } catch (err) {
      if (isDuplicateKeyError(err)) return false;
      throw err;
    }
  }

  async usedSlots(tenantId: string): Promise<number[]> {
    const docs = await this.endpoints
      .find({ tenant_id: tenantId, deleted: false }, { slot: 1 })
      .lean<{ slot: number }[]>();
    return docs.map((d) => d.slot);
  }

  async getEndpoint(tenantId: string, id: string): Promise<WebhookEndpoint | null> {
    const doc = await this.endpoints
      .findOne({ _id: id, tenant_id: tenantId, deleted: false }, { outbox: 0 })
      .lean<EndpointDoc>();
    return doc ? endpointOut(doc) : null;
  }

  async listEndpoints(tenantId: string, page: PageQuery): Promise<WebhookEndpoint[]> {
    const docs = await pageBefore(this.endpoints, {
      filter: { tenant_id: tenantId, deleted: false },
      key: '_id',
      before: page.afterId,
      limit: page.limit + 1,
      projection: { outbox: 0 },
    });
    return docs.map(endpointOut);
  }

  async enabledEndpoints(tenantId: string): Promise<WebhookEndpoint[]> {
    const docs = await this.endpoints
      .find({ tenant_id: tenantId, status: 'ENABLED', deleted: false }, { outbox: 0 })
      .lean<EndpointDoc[]>();
    return docs.map(endpointOut);
  }

  async subscribedTypes(): Promise<string[]> {
    // distinct takes the elements of the arrays: each type once.
    return ((await this.endpoints.distinct('event_types', { deleted: false })) as string[]).sort();
  }

  async endpointsByIds(ids: string[]): Promise<WebhookEndpoint[]> {
    if (ids.length === 0) return [];
    const docs = await this.endpoints
      .find({ _id: { $in: ids }, deleted: false }, { outbox: 0 })
      .lean<EndpointDoc[]>();
    return docs.map(endpointOut);
  }

  async updateEndpoint(
    read: EndpointRead,
    changes: EndpointChanges,
    updatedAt: string,
    events: AuditEvent[],
  ): Promise<WebhookEndpoint | null> {
    const doc = await this.endpoints
      .findOneAndUpdate(
        unchanged(read),
        {
          $set: { ...changesIn(changes), version: read.version + 1, updated_at: new Date(updatedAt) },
          ...pushOutbox(events),
        },
        { new: true, projection: { outbox: 0 } },
      )
      .lean<EndpointDoc>();
    return doc ? endpointOut(doc) : null;
  }

  async deleteEndpoint(read: EndpointRead, events: AuditEvent[]): Promise<boolean> {
    const result = await this.endpoints.updateOne(unchanged(read), {
      // The secrets go at once; the tombstone keeps only what its events need to be relayed.
      $set: { deleted: true, slot: null, secrets: [], status: 'DISABLED', version: read.version + 1 },
      ...pushOutbox(events),
    });
    return result.modifiedCount === 1;
  }

  async insertDeliveries(list: WebhookDelivery[]): Promise<void> {
    if (list.length === 0) return;
    try {
      await this.deliveries.insertMany(list.map(deliveryIn), { ordered: false });
    } catch (err) {
      // Repeats of an (endpoint, event) are expected (a redelivered message); anything else is not.
      const writeErrors = (err as { writeErrors?: { code?: number; err?: { code?: number } }[] }).writeErrors;
      const codes = writeErrors?.map((e) => e.code ?? e.err?.code);
      if (isDuplicateKeyError(err) && (!codes || codes.every((c) => c === 11000))) return;
      throw err;
    }
  }

  async getDelivery(tenantId: string, endpointId: string, id: string): Promise<WebhookDelivery | null> {
    const doc = await this.deliveries
      .findOne({ _id: id, tenant_id: tenantId, endpoint_id: endpointId })
      .lean<DeliveryDoc>();
    return doc ? deliveryOut(doc) : null;
  }

  async listDeliveries(
    tenantId: string,
    endpointId: string,
    page: DeliveryPageQuery,
  ): Promise<WebhookDelivery[]> {
    const docs = await pageBefore(this.deliveries, {
      filter: deliveriesFilter(tenantId, endpointId, page.status),
      key: '_id',
      before: page.afterId,
      limit: page.limit + 1,
      order: page.order,
    });
    return docs.map(deliveryOut);
  }

  /** countDocuments with the list's filter (docs/API.md, "Lists and paging": what a total costs). */
  async countDeliveries(
    tenantId: string,
    endpointId: string,
    filter: { status?: WebhookDeliveryStatus },
  ): Promise<number> {
    return this.deliveries.countDocuments(deliveriesFilter(tenantId, endpointId, filter.status));
  }

  async claimDue(now: Date, leaseUntil: Date, limit: number): Promise<ClaimedDelivery[]> {
    const due = await this.deliveries
      .find({ status: 'PENDING', next_attempt_at: { $lte: now }, lease_until: { $lte: now } }, { _id: 1 })
      .limit(limit)
      .lean<{ _id: string }[]>();
    if (due.length === 0) return [];
    const token = randomUUID();
    // The guard is in the filter: a delivery another worker leased since the read is left alone.
    await this.deliveries.updateMany(
      { _id: { $in: due.map((d) => d._id) }, status: 'PENDING', lease_until: { $lte: now } },
      { $set: { lease_until: leaseUntil, lease_token: token } },
    );
    const docs = await this.deliveries.find({ lease_token: token }).lean<DeliveryDoc[]>();
    return docs.map(claimed);
  }

  async claimOne(key: DeliveryKey, now: Date, leaseUntil: Date): Promise<ClaimedDelivery | null> {
    const doc = await this.deliveries
      .findOneAndUpdate(
        { _id: key.id, tenant_id: key.tenant_id, endpoint_id: key.endpoint_id, lease_until: { $lte: now } },
        { $set: { lease_until: leaseUntil, lease_token: randomUUID() } },
        { new: true },
      )
      .lean<DeliveryDoc>();
    return doc ? claimed(doc) : null;
  }

  async finishAttempt(
    lease: DeliveryLease,
    outcome: AttemptOutcome,
    at: string,
  ): Promise<WebhookDelivery | null> {
    const doc = await this.deliveries
      .findOneAndUpdate(
        { _id: lease.id, lease_token: lease.lease_token },
        {
          $push: {
            attempts: {
              $each: [{ ...outcome.attempt, attempted_at: new Date(outcome.attempt.attempted_at) }],
              $slice: -MAX_STORED_ATTEMPTS,
            },
          },
          $set: {
            status: outcome.status,
            next_attempt_at: outcome.next_attempt_at === null ? null : new Date(outcome.next_attempt_at),
            lease_until: EPOCH,
            lease_token: null,
            updated_at: new Date(at),
            expires_at: dateOrNull(deliveryExpiry(outcome.status, at, this.deliveryRetentionMs)),
          },
          $inc: { scheduled_attempts: outcome.scheduled ? 1 : 0 },
        },
        { new: true },
      )
      .lean<DeliveryDoc>();
    return doc ? deliveryOut(doc) : null;
  }

  async attemptCounts(
    tenantId: string,
    endpointId: string,
    since: readonly Date[],
  ): Promise<AttemptCounts[]> {
    if (since.length === 0) return [];
    const oldest = new Date(Math.min(...since.map((s) => s.getTime())));
    const ok = { $eq: [{ $ifNull: ['$attempts.error', null] }, null] };
    const sums: Record<string, { $sum: unknown }> = {};
    since.forEach((s, i) => {
      const inWindow = { $gte: ['$attempts.attempted_at', s] };
      sums[`a${i}`] = { $sum: { $cond: [inWindow, 1, 0] } };
      sums[`s${i}`] = { $sum: { $cond: [{ $and: [inWindow, ok] }, 1, 0] } };
    });
    const group = { _id: null, ...sums } as PipelineStage.Group['$group'];
    // Counted in the database: an endpoint's week may hold many thousands of attempts.
    const [row] = await this.deliveries.aggregate<Record<string, number>>([
      { $match: { tenant_id: tenantId, endpoint_id: endpointId, updated_at: { $gte: oldest } } },
      { $project: { _id: 0, attempts: 1 } },
      { $unwind: '$attempts' },
      { $match: { 'attempts.attempted_at': { $gte: oldest } } },
      { $group: group },
    ]);
    return since.map((_, i) => ({ attempts: row?.[`a${i}`] ?? 0, succeeded: row?.[`s${i}`] ?? 0 }));
  }

  async failedSince(tenantId: string, endpointId: string, since: Date, limit: number): Promise<string[]> {
    const docs = await this.deliveries
      .find(
        { tenant_id: tenantId, endpoint_id: endpointId, status: 'FAILED', created_at: { $gte: since } },
        { _id: 1 },
      )
      .sort({ _id: 1 })
      .limit(limit)
      .lean<{ _id: string }[]>();
    return docs.map((d) => d._id);
  }

  async requeueFailed(
    tenantId: string,
    endpointId: string,
    ids: readonly string[],
    now: Date,
  ): Promise<number> {
    if (ids.length === 0) return 0;
    // The guard is in the filter: one PENDING again (an earlier replay) or leased (a retry by hand) is left alone.
    const result = await this.deliveries.updateMany(
      {
        _id: { $in: [...ids] },
        tenant_id: tenantId,
        endpoint_id: endpointId,
        status: 'FAILED',
        lease_until: { $lte: now },
      },
      {
        $set: {
          status: 'PENDING',
          next_attempt_at: now,
          scheduled_attempts: 0,
          updated_at: now,
          expires_at: null,
        },
      },
    );
    return result.modifiedCount;
  }

  async backlog(): Promise<{ pending: number; oldestCreatedAt: string | null }> {
    const [pending, oldest] = await Promise.all([
      this.deliveries.countDocuments({ status: 'PENDING' }),
      this.deliveries
        .findOne({ status: 'PENDING' }, { created_at: 1 })
        .sort({ created_at: 1 })
        .lean<{ created_at: Date }>(),
    ]);
    return { pending, oldestCreatedAt: iso(oldest?.created_at) };
  }

  pendingEvents(limit: number): Promise<AuditEvent[]> {
    return pendingOutboxEvents([this.endpoints], limit);
  }

  async markSent(eventIds: string[]): Promise<void> {
    await markOutboxSent([this.endpoints], eventIds);
    // A tombstone whose last event is out has nothing left to keep.
    await this.endpoints.deleteMany({ deleted: true, 'outbox.id': { $exists: false } });
  }
}
