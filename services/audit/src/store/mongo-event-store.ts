import type { Document } from 'mongodb';
import { Schema, type Connection, type FilterQuery, type Model } from 'mongoose';
import { type LeafRange } from '@mandate/shared/mandate';
import { type AuditEvent } from '@mandate/shared/events';
import {
  isDuplicateKeyError,
  pageBefore,
  pingMongo,
  queryShapesOf,
  type MongoQueryShape,
} from '@mandate/shared/data';
import {
  isDashboardRead,
  type BackfillOptions,
  BackfillReport,
  type DecisionCount,
  type EventFilters,
  type EventListQuery,
  type EventStore,
  type LogStore,
  type StatsBucket,
  type StoredCheckpoint,
} from './event-store';
import { auditLeafHash } from './leaf-hash';
import { MongoLog } from './mongo-log';

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
  /** The event's place in its tenant's log (docs/API.md#proving-the-log); absent on platform events. */
  seq?: number;
  /**
   * true on the dashboard's own reads (isDashboardRead), absent on every other event, those stored
   * before it existed included: list?exclude_dashboard_reads=true is then an equality on null that
   * an index serves. Derived from the event, never served (fromDoc leaves it out).
   */
  dashboard_read?: true;
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
    seq: { type: Number },
    dashboard_read: { type: Boolean },
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
// list?exclude_dashboard_reads=true: { tenant_id, dashboard_read: null, _id < cursor } sorted { _id: -1 },
// since/until on the keys as above. Without it a log mostly of the dashboard's reads would be read
// through to find a page of the rest.
eventSchema.index({ tenant_id: 1, dashboard_read: 1, _id: -1, occurred_at: 1 });
// Each list index above also serves order=asc ({ _id > cursor } sorted { _id: 1 }, walked the other way)
// and include_total's countDocuments with the list's filter, which reads every matching key of it
// (docs/API.md, "Lists and paging").
// list?since=&until= over a narrow window long ago: the planner may prefer reading just that window
// { tenant_id, occurred_at ∈ [since, until) } and sorting it, to walking every newer key.
eventSchema.index({ tenant_id: 1, occurred_at: 1 });
// The log (docs/API.md#proving-the-log): (tenant_id, seq) unique is what makes seq assignment
// atomic across replicas (the insert that takes a seq fails if another took it first); also the
// tenant's highest seq and the events by seq (leaves a node is computed from).
eventSchema.index(
  { tenant_id: 1, seq: 1 },
  { unique: true, partialFilterExpression: { seq: { $exists: true } } },
);

const shapes = queryShapesOf('events', '_id');

/** Every query this adapter runs (see the methods below), for the index-coverage test. */
export const EVENT_QUERY_SHAPES: MongoQueryShape[] = [
  shapes.find('insert / insertMany (duplicate _id is a redelivery)', ['_id']),
  shapes.find('get', ['_id'], { residual: ['tenant_id'] }),
  shapes.page('list', ['tenant_id']),
  shapes.page('list?since=&until=', ['tenant_id'], { range: ['occurred_at'] }),
  shapes.page('list?exclude_dashboard_reads=true', ['tenant_id', 'dashboard_read'], {
    range: ['occurred_at'],
  }),
  shapes.page('list?type=', ['tenant_id', 'type'], {
    residual: ['resource.id', 'actor.key_id', 'occurred_at', 'dashboard_read'],
  }),
  shapes.page('list?resource_id=', ['tenant_id', 'resource.id'], {
    residual: ['actor.key_id', 'occurred_at', 'dashboard_read'],
  }),
  shapes.page('list?key_id=', ['tenant_id', 'actor.key_id'], { residual: ['occurred_at', 'dashboard_read'] }),
  // include_total: the list's filter counted (countDocuments), no sort; each filter's equality fields.
  shapes.find('count', ['tenant_id'], { range: ['occurred_at'] }),
  // occurred_at compared on the keys of { tenant_id, dashboard_read, _id, occurred_at }, as the list does.
  shapes.find('count?exclude_dashboard_reads=true', ['tenant_id', 'dashboard_read'], {
    residual: ['occurred_at'],
  }),
  shapes.find('count?type=', ['tenant_id', 'type'], {
    residual: ['resource.id', 'actor.key_id', 'occurred_at', 'dashboard_read'],
  }),
  shapes.find('count?resource_id=', ['tenant_id', 'resource.id'], {
    residual: ['actor.key_id', 'occurred_at', 'dashboard_read'],
  }),
  shapes.find('count?key_id=', ['tenant_id', 'actor.key_id'], {
    residual: ['occurred_at', 'dashboard_read'],
  }),
  shapes.find('countVerifications (aggregate: $match, then $group per bucket and decision)', ['tenant_id'], {
    range: ['occurred_at'],
    residual: ['type'],
  }),
  shapes.find('listByResource', ['tenant_id', 'resource.id'], { sort: { _id: 1 } }),
  shapes.find('readByResource (evidence export cursor)', ['tenant_id', 'resource.id'], { sort: { _id: 1 } }),
  shapes.find('logSize (highest seq)', ['tenant_id', 'seq'], { sort: { seq: -1 } }),
  shapes.find('leaves by seq ($in)', ['tenant_id', 'seq']),
  shapes.find('backfill: the tenants (distinct tenant_id)', ['tenant_id']),
  shapes.find('backfill: events without seq, oldest first', ['tenant_id'], {
    sort: { _id: 1 },
    residual: ['seq'],
  }),
  shapes.find('backfill: set seq where absent', ['_id'], { residual: ['seq'] }),
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
    ...(event.seq !== undefined ? { seq: event.seq } : {}),
    ...(isDashboardRead(event) ? { dashboard_read: true as const } : {}),
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
    ...(doc.seq != null ? { seq: doc.seq } : {}),
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

/** The index of the first failed write of an ordered insertMany: how many were inserted before it. */
function firstFailedIndex(err: unknown): number | undefined {
  const writeErrors = (err as { writeErrors?: unknown }).writeErrors;
  if (writeErrors === undefined) return undefined;
  const list = (Array.isArray(writeErrors) ? writeErrors : [writeErrors]) as { index?: number }[];
  const indexes = list.map((e) => e.index).filter((i): i is number => typeof i === 'number');
  return indexes.length > 0 ? Math.min(...indexes) : undefined;
}

/** The batches of one tenant waiting for their turn, written as one append. */
interface AppendGroup {
  events: AuditEvent[];
  ids: Set<string>;
  written: Promise<void>;
}

/** One tenant's appends in this process: the last one queued, and the group still taking batches. */
interface TenantTurn {
  tail: Promise<void>;
  waiting?: AppendGroup;
}

/** A group takes batches up to this many events; more start the next group (memory stays bounded). */
const MAX_GROUP_EVENTS = 500;

/** What a list of the tenant's events selects: the same filter for its pages and for its count. */
function listFilter(tenantId: string, q: EventFilters): FilterQuery<EventDoc> {
  const filter: FilterQuery<EventDoc> = { tenant_id: tenantId };
  if (q.types && q.types.length > 0) filter.type = { $in: q.types };
  if (q.resource_id !== undefined) filter['resource.id'] = q.resource_id;
  if (q.key_id !== undefined) filter['actor.key_id'] = q.key_id;
  // null matches the field's absence, one key of the index: events stored before it are kept.
  if (q.exclude_dashboard_reads) filter.dashboard_read = null;
  if (q.since !== undefined || q.until !== undefined) {
    const range: Record<string, Date> = {};
    if (q.since !== undefined) range.$gte = new Date(q.since);
    if (q.until !== undefined) range.$lt = new Date(q.until);
    filter.occurred_at = range;
  }
  return filter;
}

export class MongoEventStore implements EventStore, LogStore {
  readonly kind = 'mongo' as const;
  private readonly model: Model<EventDoc>;
  private readonly log: MongoLog;
  /**
   * The seq this process would try next per tenant: a guess that is never too high (seqs only
   * grow); when another replica took it, the insert says so and the highest seq is read again.
   */
  private readonly nextSeq = new Map<string, number>();
  /**
   * Per tenant, this process's appends in turn: they take seqs one after another (run at once, they
   * would claim the same seqs, and every one but one would fail its insert, read the highest seq
   * again and retry; the consumer writes batches concurrently). Batches that arrive while one is
   * being written wait together and are written as one (docs/DECISIONS.md, "A tamper-evident audit
   * log: RFC 9162, one tree per tenant").
   */
  private readonly turns = new Map<string, TenantTurn>();

  constructor(private readonly connection: Connection) {
    this.model =
      (connection.models.AuditEvent as Model<EventDoc> | undefined) ??
      connection.model<EventDoc>('AuditEvent', eventSchema);
    this.log = new MongoLog(connection, (tenantId, seqs) => this.bySeq(tenantId, seqs));
  }

  /** Builds the indexes now, so the first queries (and the unique _id) do not race index creation. */
  async init(): Promise<void> {
    await this.model.init();
    await this.log.init();
  }

  private async bySeq(tenantId: string, seqs: number[]): Promise<AuditEvent[]> {
    const docs = await this.model
      .find({ tenant_id: tenantId, seq: { $in: seqs } })
      .lean<EventDoc[]>()
      .exec();
    return docs.map(fromDoc);
  }

  async logSize(tenantId: string): Promise<number> {
    const doc = await this.model
      .findOne({ tenant_id: tenantId, seq: { $exists: true } }, { seq: 1 })
      .sort({ seq: -1 })
      .lean<{ seq?: number }>()
      .exec();
    return doc?.seq ?? 0;
  }

  async logHashes(tenantId: string, ranges: readonly LeafRange[]): Promise<Uint8Array[]> {
    const size = Math.max(0, ...ranges.map(([, end]) => end));
    if (size > 0 && size > (await this.logSize(tenantId)))
      throw new RangeError(`the log of tenant ${tenantId} has fewer than ${size} leaves`);
    return this.log.rangeHashes(tenantId, ranges);
  }

  logHeads(): Promise<{ tenantId: string; size: number }[]> {
    return this.log.logHeads();
  }

  saveCheckpoint(checkpoint: StoredCheckpoint): Promise<void> {
    return this.log.saveCheckpoint(checkpoint);
  }

  latestCheckpoint(tenantId: string): Promise<StoredCheckpoint | null> {
    return this.log.latestCheckpoint(tenantId);
  }

  getCheckpoint(tenantId: string, treeSize: number): Promise<StoredCheckpoint | null> {
    return this.log.getCheckpoint(tenantId, treeSize);
  }

  listCheckpoints(
    tenantId: string,
    query: { limit: number; beforeSize?: number },
  ): Promise<StoredCheckpoint[]> {
    return this.log.listCheckpoints(tenantId, query);
  }

  async insert(event: AuditEvent): Promise<void> {
    await this.insertMany([event]);
  }

  async insertMany(events: AuditEvent[]): Promise<void> {
    if (events.length === 0) return;
    const platform: AuditEvent[] = [];
    const byTenant = new Map<string, AuditEvent[]>();
    const seen = new Set<string>();
    for (const event of events) {
      if (seen.has(event.id)) continue;
      seen.add(event.id);
      if (event.tenant_id === null) platform.push(event);
      else {
        const list = byTenant.get(event.tenant_id);
        if (list) list.push(event);
        else byTenant.set(event.tenant_id, [event]);
      }
    }
    if (platform.length > 0) {
      try {
        // Unordered: one duplicate does not stop the rest of the batch.
        await this.model.insertMany(
          platform.map((e) => toDoc({ ...e, seq: undefined })),
          { ordered: false, throwOnValidationError: true },
        );
      } catch (err) {
        if (!onlyDuplicateKeys(err)) throw err;
      }
    }
    await Promise.all([...byTenant].map(([tenantId, list]) => this.appendInTurn(tenantId, list)));
  }

  private appendInTurn(tenantId: string, events: AuditEvent[]): Promise<void> {
    let turn = this.turns.get(tenantId);
    if (!turn) {
      turn = { tail: Promise.resolve() };
      this.turns.set(tenantId, turn);
    }
    let group = turn.waiting;
    if (!group || group.events.length >= MAX_GROUP_EVENTS) {
      const forming: AppendGroup = { events: [], ids: new Set(), written: Promise.resolve() };
      const current = turn;
      // A failed group is its callers' to retry (their messages are redelivered); the next one
      // still takes its turn.
      forming.written = current.tail
        .catch(() => undefined)
        .then(() => {
          if (current.waiting === forming) current.waiting = undefined;
          return this.append(tenantId, forming.events);
        });
      current.tail = forming.written;
      current.waiting = forming;
      const forget = () => {
        if (this.turns.get(tenantId) === current && current.tail === forming.written)
          this.turns.delete(tenantId);
      };
      forming.written.then(forget, forget);
      group = forming;
    }
    for (const event of events)
      if (!group.ids.has(event.id)) {
        group.ids.add(event.id);
        group.events.push(event);
      }
    return group.written;
  }

  /**
   * Stores a tenant's new events with the next seqs, in order (docs/API.md#proving-the-log). The
   * insert is the claim: ordered, it stops at the first event whose _id is stored already (a
   * redelivery: it keeps its first seq and is dropped) or whose seq another writer took first
   * (the rest are numbered again after the tenant's highest seq). The events inserted are then
   * appended to the tree.
   */
  private async append(tenantId: string, events: AuditEvent[]): Promise<void> {
    const stored = await this.model
      .find({ _id: { $in: events.map((e) => e.id) } }, { _id: 1 })
      .lean<{ _id: string }[]>()
      .exec();
    const storedIds = new Set(stored.map((d) => d._id));
    let pending = events.filter((e) => !storedIds.has(e.id));
    const leaves: { index: number; hash: Uint8Array }[] = [];
    let next = this.nextSeq.get(tenantId) ?? (await this.logSize(tenantId)) + 1;
    while (pending.length > 0) {
      const docs = pending.map((e, i) => toDoc({ ...e, seq: next + i }));
      let inserted = docs.length;
      try {
        await this.model.collection.insertMany(docs as unknown as Document[], { ordered: true });
      } catch (err) {
        if (!onlyDuplicateKeys(err)) throw err;
        inserted = firstFailedIndex(err) ?? 0;
      }
      for (const doc of docs.slice(0, inserted))
        leaves.push({ index: doc.seq! - 1, hash: auditLeafHash(fromDoc(doc)) });
      next += inserted;
      if (inserted < docs.length) {
        const failed = pending[inserted]!;
        const redelivered = (await this.model.exists({ _id: failed.id }).exec()) !== null;
        pending = pending.slice(redelivered ? inserted + 1 : inserted);
        if (!redelivered) next = (await this.logSize(tenantId)) + 1;
      } else pending = [];
    }
    this.nextSeq.set(tenantId, next);
    await this.log.appended(tenantId, leaves);
  }

  /**
   * The one-time backfill (docs/OPERATIONS.md, "Events stored before the tamper-evident log"): per
   * tenant, the events without seq, oldest _id first, a batch at a time, each given the next seq by
   * an update that only applies while it has none. The unique (tenant_id, seq) index still decides:
   * a seq another writer took first is taken again after the tenant's highest, so no seq is shared
   * or skipped. A run stopped anywhere resumes where it stopped; nodes not written are computed
   * from the events on demand (mongo-log.ts), and the head is raised at the end of every tenant.
   */
  async backfillLog(options: BackfillOptions = {}): Promise<BackfillReport[]> {
    const batchSize = options.batchSize ?? 500;
    const tenants = (await this.model.distinct('tenant_id', { tenant_id: { $ne: null } }).exec()) as string[];
    const reports: BackfillReport[] = [];
    for (const tenantId of tenants.sort()) {
      let assigned = 0;
      let after: string | undefined;
      for (;;) {
        const docs = await this.model
          .find({ tenant_id: tenantId, seq: { $exists: false }, ...(after ? { _id: { $gt: after } } : {}) })
          .sort({ _id: 1 })
          .limit(batchSize)
          .lean<EventDoc[]>()
          .exec();
        if (docs.length === 0) break;
        const leaves = await this.numberInOrder(tenantId, docs);
        await this.log.appended(tenantId, leaves);
        assigned += leaves.length;
        after = docs[docs.length - 1]!._id;
        options.onBatch?.({ tenantId, assigned, size: await this.logSize(tenantId) });
      }
      const size = await this.logSize(tenantId);
      await this.log.raiseHead(tenantId, size);
      // This process's guess of the next seq is stale now.
      this.nextSeq.delete(tenantId);
      reports.push({ tenantId, assigned, size });
    }
    return reports;
  }

  /** Gives each of these events (one tenant's, oldest first) the next seq, one at a time. */
  private async numberInOrder(
    tenantId: string,
    docs: EventDoc[],
  ): Promise<{ index: number; hash: Uint8Array }[]> {
    const leaves: { index: number; hash: Uint8Array }[] = [];
    let next = (await this.logSize(tenantId)) + 1;
    for (const doc of docs) {
      for (;;) {
        try {
          const result = await this.model.collection.updateOne(
            { _id: doc._id, seq: { $exists: false } } as Document,
            { $set: { seq: next } },
          );
          // Matched nothing: another backfill numbered it first; its seq is that one's.
          if (result.matchedCount === 1) {
            leaves.push({ index: next - 1, hash: auditLeafHash(fromDoc({ ...doc, seq: next })) });
            next++;
          }
          break;
        } catch (err) {
          if (!isDuplicateKeyError(err)) throw err;
          next = (await this.logSize(tenantId)) + 1;
        }
      }
    }
    return leaves;
  }

  async get(tenantId: string, id: string): Promise<AuditEvent | null> {
    const doc = await this.model.findOne({ _id: id, tenant_id: tenantId }).lean<EventDoc>().exec();
    return doc ? fromDoc(doc) : null;
  }

  async list(tenantId: string, q: EventListQuery): Promise<AuditEvent[]> {
    // One more than the page: whether a next page exists.
    const docs = await pageBefore(this.model, {
      filter: listFilter(tenantId, q),
      key: '_id',
      before: q.afterId,
      limit: q.limit + 1,
      order: q.order,
    });
    return docs.map(fromDoc);
  }

  /**
   * countDocuments with the list's own filter, so the total is what paging through returns. It
   * reads every matching index key, docs/API.md, "Lists and paging": the cost of include_total.
   */
  async count(tenantId: string, filters: EventFilters): Promise<number> {
    return this.model.countDocuments(listFilter(tenantId, filters));
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
