import { Schema, type Connection, type FilterQuery, type Model } from 'mongoose';
import {
  isDuplicateKeyError,
  pageBefore,
  pingMongo,
  queryShapesOf,
  type AuditEvent,
  type MongoQueryShape,
} from '@mandate/shared';
import type { DecisionCount, EventListQuery, EventStore, StatsBucket } from './event-store';

interface EventDoc {
  /** The event id: the unique key that makes redeliveries idempotent. */
  _id: string;
  tenant_id: string | null;
  type: string;
  /** A Date, so since/until compare instants rather than strings. */
  occurred_at: Date;
  actor: { type: string; key_id?: string; subject_id?: string };
  request_id: string | null;
  resource: { type: string; id: string } | null;
  data: Record<string, unknown>;
  /** Only on events built while tracing was on. */
  trace_id?: string;
  span_id?: string;
}

export const eventSchema = new Schema<EventDoc>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, default: null },
    type: { type: String, required: true },
    occurred_at: { type: Date, required: true },
    actor: {
      type: new Schema(
        { type: { type: String, required: true }, key_id: { type: String }, subject_id: { type: String } },
        { _id: false },
      ),
      required: true,
    },
    request_id: { type: String, default: null },
    resource: {
      type: new Schema(
        { type: { type: String, required: true }, id: { type: String, required: true } },
        { _id: false },
      ),
      default: null,
    },
    data: { type: Schema.Types.Mixed, default: {} },
    trace_id: { type: String },
    span_id: { type: String },
  },
  // minimize:false keeps an empty `data: {}` instead of dropping the field.
  { collection: 'events', versionKey: false, minimize: false },
);

// list (GET /events) without filters: { tenant_id, _id < cursor } sorted { _id: -1 }; with since/until:
// the same walk, occurred_at compared on the index keys (equality, sort, range) before any document is read.
eventSchema.index({ tenant_id: 1, _id: -1, occurred_at: 1 });
// list?type=A,B: { tenant_id, type ∈ types, _id < cursor } sorted { _id: -1 } (one walk per type, merged).
eventSchema.index({ tenant_id: 1, type: 1, _id: -1 });
// list?resource_id=: { tenant_id, 'resource.id', _id < cursor } sorted { _id: -1 }; listByResource (the
// evidence export, every event about one mandate): { tenant_id, 'resource.id' } sorted { _id: 1 }, this index walked backwards.
eventSchema.index({ tenant_id: 1, 'resource.id': 1, _id: -1 });
// list?key_id=: { tenant_id, 'actor.key_id', _id < cursor } sorted { _id: -1 }.
eventSchema.index({ tenant_id: 1, 'actor.key_id': 1, _id: -1 });
// list?since=&until= over a narrow window long ago: the planner may prefer reading just that window
// { tenant_id, occurred_at ∈ [since, until) } and sorting it, to walking every newer key.
eventSchema.index({ tenant_id: 1, occurred_at: 1 });

const shapes = queryShapesOf('events', '_id');

/** Every query this adapter runs (see the methods below), for the index-coverage test. */
export const EVENT_QUERY_SHAPES: MongoQueryShape[] = [
  shapes.find('insert / insertMany (duplicate _id is a redelivery)', ['_id']),
  shapes.find('get', ['_id'], { residual: ['tenant_id'] }),
  shapes.page('list', ['tenant_id']),
  shapes.page('list?since=&until=', ['tenant_id'], { range: ['occurred_at'] }),
  shapes.page('list?type=', ['tenant_id', 'type'], {
    residual: ['resource.id', 'actor.key_id', 'occurred_at'],
  }),
  shapes.page('list?resource_id=', ['tenant_id', 'resource.id'], {
    residual: ['actor.key_id', 'occurred_at'],
  }),
  shapes.page('list?key_id=', ['tenant_id', 'actor.key_id'], { residual: ['occurred_at'] }),
  shapes.find('countVerifications (aggregate: $match, then $group per bucket and decision)', ['tenant_id'], {
    range: ['occurred_at'],
    residual: ['type'],
  }),
  shapes.find('listByResource', ['tenant_id', 'resource.id'], { sort: { _id: 1 } }),
  shapes.find('readByResource (evidence export cursor)', ['tenant_id', 'resource.id'], { sort: { _id: 1 } }),
];

function toDoc(event: AuditEvent): EventDoc {
  return {
    _id: event.id,
    tenant_id: event.tenant_id,
    type: event.type,
    occurred_at: new Date(event.occurred_at),
    actor: event.actor,
    request_id: event.request_id,
    resource: event.resource,
    data: event.data,
    ...(event.trace_id !== undefined ? { trace_id: event.trace_id } : {}),
    ...(event.span_id !== undefined ? { span_id: event.span_id } : {}),
  };
}

function fromDoc(doc: EventDoc): AuditEvent {
  const actor: AuditEvent['actor'] = { type: doc.actor.type as AuditEvent['actor']['type'] };
  if (doc.actor.key_id != null) actor.key_id = doc.actor.key_id;
  if (doc.actor.subject_id != null) actor.subject_id = doc.actor.subject_id;
  return {
    id: doc._id,
    tenant_id: doc.tenant_id ?? null,
    type: doc.type as AuditEvent['type'],
    occurred_at: new Date(doc.occurred_at).toISOString(),
    actor,
    request_id: doc.request_id ?? null,
    resource: doc.resource ? { type: doc.resource.type, id: doc.resource.id } : null,
    data: doc.data ?? {},
    ...(doc.trace_id != null ? { trace_id: doc.trace_id } : {}),
    ...(doc.span_id != null ? { span_id: doc.span_id } : {}),
  };
}

/** True when every failure of an unordered bulk insert is a duplicate key, i.e. a redelivery. */
function onlyDuplicateKeys(err: unknown): boolean {
  const writeErrors = (err as { writeErrors?: unknown }).writeErrors;
  if (writeErrors === undefined) return isDuplicateKeyError(err);
  const list = Array.isArray(writeErrors) ? writeErrors : [writeErrors];
  return (
    list.length > 0 &&
    list.every(
      (e) => (e as { code?: number }).code === 11000 || isDuplicateKeyError((e as { err?: unknown }).err),
    )
  );
}

export class MongoEventStore implements EventStore {
  readonly kind = 'mongo' as const;
  private readonly model: Model<EventDoc>;

  constructor(private readonly connection: Connection) {
    this.model =
      (connection.models.AuditEvent as Model<EventDoc> | undefined) ??
      connection.model<EventDoc>('AuditEvent', eventSchema);
  }

  /** Builds the indexes now, so the first queries (and the unique _id) do not race index creation. */
  async init(): Promise<void> {
    await this.model.init();
  }

  async insert(event: AuditEvent): Promise<void> {
    try {
      await this.model.create(toDoc(event));
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
    }
  }

  async insertMany(events: AuditEvent[]): Promise<void> {
    if (events.length === 0) return;
    try {
      // Unordered: one duplicate does not stop the rest of the batch.
      await this.model.insertMany(events.map(toDoc), { ordered: false, throwOnValidationError: true });
    } catch (err) {
      if (!onlyDuplicateKeys(err)) throw err;
    }
  }

  async get(tenantId: string, id: string): Promise<AuditEvent | null> {
    const doc = await this.model.findOne({ _id: id, tenant_id: tenantId }).lean<EventDoc>().exec();
    return doc ? fromDoc(doc) : null;
  }

  async list(tenantId: string, q: EventListQuery): Promise<AuditEvent[]> {
    const filter: FilterQuery<EventDoc> = { tenant_id: tenantId };
    if (q.types && q.types.length > 0) filter.type = { $in: q.types };
    if (q.resource_id !== undefined) filter['resource.id'] = q.resource_id;
    if (q.key_id !== undefined) filter['actor.key_id'] = q.key_id;
    if (q.since !== undefined || q.until !== undefined) {
      const range: Record<string, Date> = {};
      if (q.since !== undefined) range.$gte = new Date(q.since);
      if (q.until !== undefined) range.$lt = new Date(q.until);
      filter.occurred_at = range;
    }
    // One more than the page: whether a next page exists.
    const docs = await pageBefore(this.model, { filter, key: '_id', before: q.afterId, limit: q.limit + 1 });
    return docs.map(fromDoc);
  }

  async listByResource(tenantId: string, resourceId: string, limit: number): Promise<AuditEvent[]> {
    // Served by { tenant_id, resource.id, _id: -1 }, walked backwards.
    const docs = await this.model
      .find({ tenant_id: tenantId, 'resource.id': resourceId })
      .sort({ _id: 1 })
      .limit(limit + 1)
      .lean<EventDoc[]>()
      .exec();
    return docs.map(fromDoc);
  }

  async *readByResource(tenantId: string, resourceId: string): AsyncIterable<AuditEvent> {
    // Same index as listByResource; a cursor fetches 500 documents at a time, whatever the total.
    const cursor = this.model
      .find({ tenant_id: tenantId, 'resource.id': resourceId })
      .sort({ _id: 1 })
      .lean<EventDoc[]>()
      .cursor({ batchSize: 500 });
    try {
      for await (const doc of cursor) yield fromDoc(doc as EventDoc);
    } finally {
      await cursor.close();
    }
  }

  /**
   * Counted by MongoDB: the window's events read on { tenant_id, occurred_at } (type checked on
   * them), grouped by $dateToString of occurred_at (UTC, its default) and data.decision.
   */
  async countVerifications(
    tenantId: string,
    q: { since: string; until: string; bucket: StatsBucket },
  ): Promise<DecisionCount[]> {
    const rows = await this.model
      .aggregate<{ _id: { bucket: string; decision: unknown }; count: number }>([
        {
          $match: {
            tenant_id: tenantId,
            occurred_at: { $gte: new Date(q.since), $lt: new Date(q.until) },
            type: 'VERIFICATION_PERFORMED',
          },
        },
        {
          $group: {
            _id: {
              bucket: {
                $dateToString: {
                  date: '$occurred_at',
                  format: q.bucket === 'hour' ? '%Y-%m-%dT%H' : '%Y-%m-%d',
                },
              },
              decision: '$data.decision',
            },
            count: { $sum: 1 },
          },
        },
      ])
      .hint({ tenant_id: 1, occurred_at: 1 })
      .exec();
    return rows.map((r) => ({ bucket: r._id.bucket, decision: String(r._id.decision), count: r.count }));
  }

  ping(): Promise<void> {
    return pingMongo(this.connection);
  }
}
