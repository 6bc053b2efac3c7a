import { Schema, type Connection, type FilterQuery, type Model } from 'mongoose';
import { conflict, serviceUnavailable } from '@mandate/shared/core';
import { type AuditEvent } from '@mandate/shared/events';
import {
  MongoOutboxSource,
  WITHOUT_OUTBOX,
  insertOrRefuse,
  isDuplicateKeyError,
  outboxQueryShapes,
  pageBefore,
  pushOutbox,
  queryShapesOf,
  withOutbox,
  type MongoQueryShape,
  type StoredAs,
} from '@mandate/shared/data';
import {
  EXPIRABLE_STATES,
  MANDATE_STATES,
  searchNeedleOf,
  searchTextOf,
  type Mandate,
} from '../domain/mandate';
import type {
  CreateRequest,
  ListMandatesQuery,
  MandateFilters,
  MandateStore,
  TransitionPatch,
} from './mandate-store';
import { MongoAuthorizations } from './mongo-authorizations';
import {
  STATUS_LIST_CAPACITY,
  nextStatusList,
  slotAt,
  type PublishedStatusList,
  type StatusEntry,
  type StatusListRecord,
  type StatusSlot,
} from '../status-lists/status-list';

/**
 * The document as MongoDB holds it: timestamps as Dates so they compare and index as times; the
 * status-list slot also as top-level fields (not served) for its unique index and the list's query.
 */
type MandateDoc = StoredAs<Mandate, 'valid_from' | 'expires_at' | 'created_at' | 'updated_at'> & {
  status_list_id?: string;
  status_idx?: number;
  request_key?: string;
  /** The digest of the create request stored under request_key: the same key with another request is a conflict. */
  request_digest?: string;
  /** searchTextOf(mandate), for `q` (never served). */
  search_text?: string;
};

type StatusListDoc = StatusListRecord & { outbox?: AuditEvent[] };

export const mandateSchema = new Schema<MandateDoc>(
  {
    id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    // Mixed keeps the client's objects exactly as signed (no defaulted [] or dropped {}).
    principal: { type: Schema.Types.Mixed, required: true },
    delegate: { type: Schema.Types.Mixed, required: true },
    scope: { type: Schema.Types.Mixed, required: true },
    state: { type: String, enum: MANDATE_STATES, required: true },
    valid_from: { type: Date, default: null },
    expires_at: { type: Date, default: null },
    metadata: { type: Schema.Types.Mixed, default: {} },
    version: { type: Number, required: true },
    created_at: { type: Date, required: true },
    updated_at: { type: Date, required: true },
    signature: { type: Schema.Types.Mixed, required: true },
    // The signed status claim as served ({status_list: {idx, uri}}), and its slot for the indexes below.
    status: { type: Schema.Types.Mixed, default: undefined },
    status_list_id: { type: String, default: undefined },
    status_idx: { type: Number, default: undefined },
    // The creating request's Idempotency-Key, hashed with its caller (requestKeyOf); never served.
    request_key: { type: String, default: undefined },
    request_digest: { type: String, default: undefined },
    // The parties' ids and names lower-cased (searchTextOf), for list?q=; never served.
    search_text: { type: String, default: undefined },
    // Written in the same document write as the change it records; the relay $pulls what the broker confirmed.
    outbox: { type: [Schema.Types.Mixed], default: undefined },
  },
  // id: false — our `id` field is data, not mongoose's virtual; minimize: false keeps `metadata: {}`.
  { collection: 'mandates', versionKey: false, minimize: false, id: false },
);

// get and transition: { tenant_id, id } (transition adds version, checked on the one document found);
// list without filters: { tenant_id, id < cursor } sorted { id: -1 }, this index walked backwards.
mandateSchema.index({ tenant_id: 1, id: 1 }, { unique: true });
// list?state=ACTIVE|SUSPENDED|REVOKED: { tenant_id, state, id < cursor } sorted { id: -1 } (expires_at
// checked on the documents found); list?state=EXPIRED: each $or branch, { tenant_id, state } and
// { tenant_id, state ∈ ACTIVE|SUSPENDED, expires_at ≤ now }, merged in id order.
mandateSchema.index({ tenant_id: 1, state: 1, id: -1 });
// list?principal_id=…: { tenant_id, 'principal.id', id < cursor } sorted { id: -1 } (state checked on the documents found).
mandateSchema.index({ tenant_id: 1, 'principal.id': 1, id: -1 });
// list?delegate_id=…: { tenant_id, 'delegate.id', id < cursor } sorted { id: -1 } (state checked on the documents found).
mandateSchema.index({ tenant_id: 1, 'delegate.id': 1, id: -1 });
// list?q=…: { tenant_id, id < cursor, search_text ~ /<q, escaped>/ } sorted { id: -1 }. An unanchored
// regex cannot seek, so the index is walked in id order within the tenant and the regex is tested
// on the key (no document fetched unless it matches), stopping at limit + 1 matches
// (docs/DECISIONS.md, "Mandate search").
mandateSchema.index({ tenant_id: 1, id: -1, search_text: 1 });
// Each list index above also serves order=asc ({ id > cursor } sorted { id: 1 }, walked the other way)
// and include_total's countDocuments with the list's filter, which reads every matching key of it
// (docs/API.md, "Lists and paging").
// findDue, the expiry sweeper across tenants: { state ∈ ACTIVE|SUSPENDED, expires_at ≤ now } sorted { expires_at: 1 }.
mandateSchema.index({ state: 1, expires_at: 1 });
// pendingEvents, the outbox relay across tenants: { 'outbox.id': { $gt: '' } } (only mandates with unsent
// events have keys here, so the scan is as long as the backlog); markSent: { 'outbox.id': { $in: ids } }.
mandateSchema.index({ 'outbox.id': 1 });
// A status-list slot belongs to one mandate: the database refuses a second (mandates signed before
// status lists have none). Also statusEntries: { status_list_id } (the whole list).
mandateSchema.index(
  { status_list_id: 1, status_idx: 1 },
  { unique: true, partialFilterExpression: { status_list_id: { $type: 'string' } } },
);

// One mandate per Idempotency-Key (docs/API.md, "Idempotency"): a create retried after the gateway lost
// its record finds the first one. Also findByRequestKey: { tenant_id, request_key }.
mandateSchema.index(
  { tenant_id: 1, request_key: 1 },
  { unique: true, partialFilterExpression: { request_key: { $type: 'string' } } },
);

/** One document per status list: its slot counter and the token last published. */
export const statusListSchema = new Schema<StatusListDoc>(
  {
    list_id: { type: String, required: true },
    seq: { type: Number, required: true },
    next_idx: { type: Number, required: true },
    capacity: { type: Number, required: true },
    published: { type: Schema.Types.Mixed, default: null },
    // Keys the order of slots (slotAt); absent on lists opened before v4.
    slot_key: { type: String },
    outbox: { type: [Schema.Types.Mixed], default: undefined },
  },
  { collection: 'mandate_status_lists', versionKey: false, minimize: false, id: false },
);
// getStatusList, the slot counter's $inc and publishStatusList: { list_id } (next_idx / published checked on the one found).
statusListSchema.index({ list_id: 1 }, { unique: true });
// The open list: the highest seq, sorted { seq: -1 }; unique, so two replicas opening the next list create one.
statusListSchema.index({ seq: 1 }, { unique: true });
// The relay's outbox queries on this collection (STATUS_LIST_PUBLISHED).
statusListSchema.index({ 'outbox.id': 1 });

const shapes = queryShapesOf('mandates', 'id');
const listShapes = queryShapesOf('mandate_status_lists');

/** Every query this adapter runs (see the methods below), for the index-coverage test. */
export const MANDATE_QUERY_SHAPES: MongoQueryShape[] = [
  shapes.find('get', ['tenant_id', 'id']),
  shapes.find('transition', ['tenant_id', 'id'], { residual: ['version'] }),
  shapes.page('list', ['tenant_id']),
  shapes.page('list?state=ACTIVE|SUSPENDED|REVOKED', ['tenant_id', 'state'], { residual: ['expires_at'] }),
  shapes.page('list?state=EXPIRED, each $or branch', ['tenant_id', 'state'], { residual: ['expires_at'] }),
  shapes.page('list?principal_id=', ['tenant_id', 'principal.id'], {
    residual: ['state', 'expires_at', 'delegate.id'],
  }),
  shapes.page('list?delegate_id=', ['tenant_id', 'delegate.id'], { residual: ['state', 'expires_at'] }),
  shapes.page('list?q=', ['tenant_id'], {
    range: ['search_text'],
    residual: ['state', 'expires_at', 'principal.id', 'delegate.id'],
  }),
  // include_total: the list's filter counted (countDocuments), no sort; each filter's equality fields.
  shapes.find('count', ['tenant_id'], { residual: ['search_text'] }),
  shapes.find('count?state=, each $or branch for EXPIRED', ['tenant_id', 'state'], {
    residual: ['expires_at'],
  }),
  shapes.find('count?principal_id=', ['tenant_id', 'principal.id'], {
    residual: ['state', 'expires_at', 'delegate.id', 'search_text'],
  }),
  shapes.find('count?delegate_id=', ['tenant_id', 'delegate.id'], {
    residual: ['state', 'expires_at', 'search_text'],
  }),
  shapes.find('findDue', ['state'], { sort: { expires_at: 1 } }),
  shapes.find('backfillSearchText: the walk', [], { sort: { _id: 1 } }),
  shapes.find('backfillSearchText: $set', ['_id'], { residual: ['search_text'] }),
  ...outboxQueryShapes('mandates'),
  shapes.find('statusEntries', ['status_list_id']),
  shapes.find('findByRequestKey', ['tenant_id', 'request_key']),
  listShapes.find('allocateStatusSlot: the open list', [], { sort: { seq: -1 } }),
  listShapes.find('allocateStatusSlot: $inc', ['list_id'], { residual: ['next_idx'] }),
  listShapes.find('getStatusList', ['list_id']),
  listShapes.find('publishStatusList', ['list_id'], { residual: ['published.etag', 'published'] }),
  ...outboxQueryShapes('mandate_status_lists'),
];

/** What a list of the tenant's mandates selects: the same filter for its pages and for its count. */
function listFilter(tenantId: string, query: MandateFilters): FilterQuery<MandateDoc> {
  const filter: FilterQuery<MandateDoc> = { tenant_id: tenantId };
  if (query.principal_id !== undefined) filter['principal.id'] = query.principal_id;
  if (query.delegate_id !== undefined) filter['delegate.id'] = query.delegate_id;
  // Escaped: `q` is literal text, never a pattern (docs/API.md, "Mandates").
  if (query.q !== undefined) filter.search_text = { $regex: escapeRegex(searchNeedleOf(query.q)) };
  const now = query.now;
  switch (query.state) {
    case undefined:
      break;
    case 'ACTIVE':
    case 'SUSPENDED':
      // Past expiry these read as EXPIRED, so they leave the ACTIVE/SUSPENDED lists at once.
      filter.state = query.state;
      filter.$or = [{ expires_at: null }, { expires_at: { $gt: now } }];
      break;
    case 'EXPIRED':
      // Persisted by the sweeper, or not yet swept but past expiry.
      filter.$or = [
        { state: 'EXPIRED' },
        { state: { $in: [...EXPIRABLE_STATES] }, expires_at: { $lte: now } },
      ];
      break;
    case 'REVOKED':
      filter.state = 'REVOKED';
      break;
  }
  return filter;
}

export class MongoMandateStore extends MongoOutboxSource implements MandateStore {
  readonly kind = 'mongo' as const;

  private constructor(
    connection: Connection,
    private readonly model: Model<MandateDoc>,
    private readonly lists: Model<StatusListDoc>,
    private readonly statusListCapacity: number,
    readonly authorizations: MongoAuthorizations,
  ) {
    super(connection, [model, lists, authorizations.model] as never);
  }

  /**
   * Builds the models on `connection` and waits until their indexes exist. `statusListCapacity`:
   * entries per status list (100,000; tests close lists sooner).
   */
  static async create(
    connection: Connection,
    options: { statusListCapacity?: number } = {},
  ): Promise<MongoMandateStore> {
    const model = connection.model<MandateDoc>('Mandate', mandateSchema);
    const lists = connection.model<StatusListDoc>('MandateStatusList', statusListSchema);
    await model.init();
    await lists.init();
    return new MongoMandateStore(
      connection,
      model,
      lists,
      options.statusListCapacity ?? STATUS_LIST_CAPACITY,
      await MongoAuthorizations.create(connection),
    );
  }

  async create(
    tenantId: string,
    mandate: Mandate,
    outbox: AuditEvent[] = [],
    slot?: StatusSlot,
    request?: CreateRequest,
  ): Promise<Mandate> {
    const doc = toDoc({ ...mandate, tenant_id: tenantId });
    const searchField = { search_text: searchTextOf(mandate) };
    const slotFields = slot ? { status_list_id: slot.list_id, status_idx: slot.idx } : {};
    const keyField =
      request === undefined ? {} : { request_key: request.key, request_digest: request.digest };
    // One insert holds the mandate, its slot, its request key and its MANDATE_CREATED: all are stored or none is.
    const stored = { ...doc, ...searchField, ...slotFields, ...keyField, ...withOutbox(outbox) };
    await insertOrRefuse(this.model, stored, (keyPattern) =>
      conflict('status_list_id' in keyPattern ? 'Status list slot already taken' : 'Mandate already exists'),
    );
    return fromDoc(doc);
  }

  async allocateStatusSlot(): Promise<StatusSlot> {
    // Bounded: each round either takes a slot or sees the next list opened (by us or a racing replica).
    for (let attempt = 0; attempt < 10; attempt++) {
      const open = await this.lists
        .findOne({}, { _id: 0, list_id: 1, seq: 1, capacity: 1 })
        .sort({ seq: -1 })
        .lean<Pick<StatusListDoc, 'list_id' | 'seq' | 'capacity'>>();
      if (open) {
        // The atomic counter: concurrent callers each get their own value, and a full list none.
        const taken = await this.lists
          .findOneAndUpdate(
            { list_id: open.list_id, next_idx: { $lt: open.capacity } },
            { $inc: { next_idx: 1 } },
            {
              returnDocument: 'after',
              projection: { _id: 0, list_id: 1, next_idx: 1, capacity: 1, slot_key: 1 },
            },
          )
          .lean<Pick<StatusListDoc, 'list_id' | 'next_idx' | 'capacity' | 'slot_key'>>();
        if (taken)
          return { list_id: taken.list_id, idx: slotAt(taken.slot_key, taken.next_idx - 1, taken.capacity) };
      }
      try {
        await this.lists.create(nextStatusList(open, this.statusListCapacity));
      } catch (err) {
        // Another replica opened it first: take a slot of that one.
        if (!isDuplicateKeyError(err)) throw err;
      }
    }
    throw serviceUnavailable('No status list slot could be allocated; retry');
  }

  async getStatusList(listId: string): Promise<StatusListRecord | null> {
    const doc = await this.lists.findOne({ list_id: listId }, WITHOUT_OUTBOX).lean<StatusListDoc>();
    return doc
      ? {
          list_id: doc.list_id,
          seq: doc.seq,
          next_idx: doc.next_idx,
          capacity: doc.capacity,
          published: doc.published ?? null,
        }
      : null;
  }

  async statusEntries(listId: string): Promise<StatusEntry[]> {
    const docs = await this.model
      .find({ status_list_id: listId }, { _id: 0, status_idx: 1, state: 1, expires_at: 1 })
      .lean<Pick<MandateDoc, 'status_idx' | 'state' | 'expires_at'>[]>();
    return docs.map((d) => ({
      idx: d.status_idx!,
      state: d.state,
      expires_at: d.expires_at == null ? null : new Date(d.expires_at).toISOString(),
    }));
  }

  async publishStatusList(
    listId: string,
    expectedEtag: string | null,
    published: PublishedStatusList,
    outbox: AuditEvent[] = [],
  ): Promise<boolean> {
    const result = await this.lists.updateOne(
      expectedEtag === null
        ? { list_id: listId, published: null }
        : { list_id: listId, 'published.etag': expectedEtag },
      // The token and its STATUS_LIST_PUBLISHED in one single-document update.
      { $set: { published }, ...pushOutbox(outbox) },
    );
    return result.matchedCount === 1;
  }

  async findByRequestKey(
    tenantId: string,
    key: string,
  ): Promise<{ mandate: Mandate; digest: string | null } | null> {
    const doc = await this.model
      .findOne({ tenant_id: tenantId, request_key: key }, WITHOUT_OUTBOX)
      .lean<MandateDoc>();
    return doc ? { mandate: fromDoc(doc), digest: doc.request_digest ?? null } : null;
  }

  async get(tenantId: string, id: string): Promise<Mandate | null> {
    const doc = await this.model.findOne({ tenant_id: tenantId, id }, WITHOUT_OUTBOX).lean<MandateDoc>();
    return doc ? fromDoc(doc) : null;
  }

  async list(tenantId: string, query: ListMandatesQuery): Promise<Mandate[]> {
    // One more than the page: whether a next page exists.
    const docs = await pageBefore(this.model, {
      filter: listFilter(tenantId, query),
      key: 'id',
      before: query.afterId,
      limit: query.limit + 1,
      projection: WITHOUT_OUTBOX,
      order: query.order,
    });
    return docs.map(fromDoc);
  }

  /**
   * countDocuments with the list's own filter, so the total is what paging through returns. It
   * reads every matching index key, docs/API.md, "Lists and paging": the cost of include_total.
   */
  async count(tenantId: string, filters: MandateFilters): Promise<number> {
    return this.model.countDocuments(listFilter(tenantId, filters));
  }

  async transition(
    tenantId: string,
    id: string,
    expectedVersion: number,
    patch: TransitionPatch,
    outbox: AuditEvent[] = [],
  ): Promise<Mandate | null> {
    const doc = await this.model
      .findOneAndUpdate(
        { tenant_id: tenantId, id, version: expectedVersion },
        {
          $set: { state: patch.state, version: patch.version, updated_at: new Date(patch.updated_at) },
          // Same single-document update as the state change: atomic without a transaction.
          ...pushOutbox(outbox),
        },
        { returnDocument: 'after', projection: WITHOUT_OUTBOX },
      )
      .lean<MandateDoc>();
    return doc ? fromDoc(doc) : null;
  }

  /**
   * `npm run mandates:backfill-search`: gives every mandate stored before `search_text` existed its
   * search text (docs/DECISIONS.md, "Mandate search"), walking the collection in `_id` order, `batch`
   * at a time. Idempotent: a mandate that has it is left alone. Returns how many it gave it to.
   */
  async backfillSearchText(batch = 500): Promise<number> {
    let after: unknown = undefined;
    let given = 0;
    for (;;) {
      const docs = await this.model
        .find(after === undefined ? {} : { _id: { $gt: after } }, {
          principal: 1,
          delegate: 1,
          search_text: 1,
        })
        .sort({ _id: 1 })
        .limit(batch)
        .lean<(Pick<MandateDoc, 'principal' | 'delegate' | 'search_text'> & { _id: unknown })[]>();
      if (docs.length === 0) return given;
      after = docs.at(-1)!._id;
      const missing = docs.filter((d) => typeof d.search_text !== 'string');
      if (missing.length === 0) continue;
      const result = await this.model.bulkWrite(
        missing.map((d) => ({
          updateOne: {
            // Only where still absent: a run beside another, or beside new inserts, changes nothing twice.
            filter: { _id: d._id, search_text: { $exists: false } },
            update: { $set: { search_text: searchTextOf(d) } },
          },
        })),
      );
      given += result.modifiedCount;
    }
  }

  async findDue(now: Date, limit: number): Promise<Mandate[]> {
    const docs = await this.model
      .find({ state: { $in: [...EXPIRABLE_STATES] }, expires_at: { $ne: null, $lte: now } }, WITHOUT_OUTBOX)
      .sort({ expires_at: 1 })
      .limit(limit)
      .lean<MandateDoc[]>();
    return docs.map(fromDoc);
  }
}

/** `text` as a regular expression that matches exactly it. */
const escapeRegex = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function toDoc(m: Mandate): MandateDoc {
  return {
    ...m,
    valid_from: m.valid_from === null ? null : new Date(m.valid_from),
    expires_at: m.expires_at === null ? null : new Date(m.expires_at),
    created_at: new Date(m.created_at),
    updated_at: new Date(m.updated_at),
  };
}

/** A plain mandate with exactly the API's fields: nothing of MongoDB's (_id) leaks out. */
function fromDoc(d: MandateDoc): Mandate {
  const iso = (v: Date | string) => new Date(v).toISOString();
  return {
    id: d.id,
    tenant_id: d.tenant_id,
    principal: d.principal,
    delegate: d.delegate,
    scope: d.scope,
    state: d.state,
    valid_from: d.valid_from == null ? null : iso(d.valid_from),
    expires_at: d.expires_at == null ? null : iso(d.expires_at),
    metadata: d.metadata ?? {},
    version: d.version,
    created_at: iso(d.created_at),
    updated_at: iso(d.updated_at),
    signature: d.signature,
    ...(d.status ? { status: d.status } : {}),
  };
}
