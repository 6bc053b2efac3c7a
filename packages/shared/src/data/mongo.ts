import mongoose, { type Connection, type FilterQuery, type Model, type ProjectionType } from 'mongoose';
import type { AuditEvent } from '../events/events';
import type { Logger } from '../observability/logger';
import { redactUrl } from '../core/redact-url';

/**
 * One mongoose connection per service (not the global default), so several services can share a
 * process in embedded-with-Mongo mode and each keeps its own database.
 */
export async function connectMongo(url: string, dbName: string, logger: Logger): Promise<Connection> {
  const connection = mongoose.createConnection(url, {
    dbName,
    serverSelectionTimeoutMS: 5_000,
    autoIndex: true,
  });
  await connection.asPromise();
  logger.info({ mongo: redactUrl(url), db: dbName }, 'connected to MongoDB');
  return connection;
}

/** MongoDB's duplicate-key error, which stores map to CONFLICT (or to idempotent success). */
export function isDuplicateKeyError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: number }).code === 11000;
}

/** One insert of `doc`; a unique index refusing it becomes `refused(keyPattern)` (a domain conflict). */
export async function insertOrRefuse<D>(
  model: Model<D>,
  doc: NoInfer<D>,
  refused: (keyPattern: Record<string, unknown>) => Error,
): Promise<void> {
  try {
    await model.create(doc);
  } catch (err) {
    if (isDuplicateKeyError(err))
      throw refused((err as { keyPattern?: Record<string, unknown> }).keyPattern ?? {});
    throw err;
  }
}

/**
 * One query an adapter runs, declared next to the code that runs it, so a test can check that a
 * declared index serves it (equality fields first, then the sort, then ranges: the ESR rule).
 */
export interface MongoQueryShape {
  /** The store method (and variant) that runs it, for the failure message. */
  query: string;
  collection: string;
  /** Fields matched by equality; `$in` counts too (MongoDB walks each value's range, merging for a sort). */
  equality: string[];
  /** The sort, in order; a cursor's `$lt`/`$gt` on the sort field needs nothing more. */
  sort?: Record<string, 1 | -1>;
  /** Range predicates on other fields: they follow equality and sort in the index. */
  range?: string[];
  /** Predicates checked on the documents the index found (no key needed: few documents reach them). */
  residual?: string[];
}

/** What a shape adds to its equality fields. */
type ShapeDetail = Pick<MongoQueryShape, 'sort' | 'range' | 'residual'>;

/** The sort of a cursor list: `key` descending, newest first (ids sort by creation). */
const newestFirst = (key: string): Record<string, -1> => ({ [key]: -1 });

/**
 * The shapes of one collection's queries, the collection named once. `page` is the shape of a
 * `pageBefore` list on `pageKey` (its filter's equality fields, then pageBefore's own sort), so a
 * list's declared shape cannot drift from the query it runs (`_id` when the collection is never
 * listed); `find` is any other query.
 */
export function queryShapesOf(collection: string, pageKey = '_id') {
  return {
    find: (query: string, equality: string[], detail: ShapeDetail = {}): MongoQueryShape => ({
      query,
      collection,
      equality,
      ...detail,
    }),
    page: (query: string, equality: string[], detail: Omit<ShapeDetail, 'sort'> = {}): MongoQueryShape => ({
      query,
      collection,
      equality,
      sort: newestFirst(pageKey),
      ...detail,
    }),
  };
}

/** The relay's queries on one outbox collection: `pendingOutboxEvents` and `markOutboxSent` below. */
export function outboxQueryShapes(collection: string): MongoQueryShape[] {
  return [
    { query: 'pendingEvents', collection, equality: [], range: ['outbox.id'] },
    { query: 'markSent', collection, equality: ['outbox.id'] },
  ];
}

/** A document that may carry `outbox`: audit events of its own changes not yet confirmed by the broker. */
export interface OutboxDoc {
  outbox?: AuditEvent[];
}

/**
 * A record of the domain as its document stores it: the timestamps `Dates` as Dates (so they
 * compare and index as times; nullable where the record's are), the rest as the record has them
 * but for `Renamed` (the document names those its own way), and the outbox.
 */
export type StoredAs<T, Dates extends keyof T, Renamed extends keyof T = never> = Omit<T, Dates | Renamed> & {
  [K in Dates]: null extends T[K] ? Date | null : Date;
} & OutboxDoc;

/** Reads never carry the outbox (it is the relay's, not the API's), nor MongoDB's _id. */
export const WITHOUT_OUTBOX = { _id: 0, outbox: 0 } as const;

/** The events stored by an insert, in the inserted document itself, or nothing. */
export const withOutbox = (events: AuditEvent[] | undefined) =>
  events && events.length > 0 ? { outbox: events } : {};

/** $push of the events in the same single-document update as the change they record, or nothing. */
export const pushOutbox = (events: AuditEvent[] | undefined) =>
  events && events.length > 0 ? { $push: { outbox: { $each: events } } } : {};

/**
 * The relay's read across the outbox collections, in order: whole documents' events (a change's
 * events are never split), stopping before a document that would take the batch past `limit`
 * unless the batch is still empty.
 */
export async function pendingOutboxEvents<D extends OutboxDoc>(
  models: readonly Model<D>[],
  limit: number,
): Promise<AuditEvent[]> {
  const events: AuditEvent[] = [];
  for (const model of models) {
    const docs = await model
      .find({ 'outbox.id': { $gt: '' } }, { _id: 0, outbox: 1 })
      .limit(limit)
      .lean<{ outbox: AuditEvent[] }[]>();
    for (const doc of docs) {
      if (events.length > 0 && events.length + doc.outbox.length > limit) return events;
      events.push(...doc.outbox);
    }
  }
  return events;
}

/** Removes the events the broker confirmed from every outbox collection. */
export async function markOutboxSent<D extends OutboxDoc>(
  models: readonly Model<D>[],
  eventIds: string[],
): Promise<void> {
  if (eventIds.length === 0) return;
  for (const model of models) {
    await model.updateMany(
      { 'outbox.id': { $in: eventIds } },
      { $pull: { outbox: { id: { $in: eventIds } } } },
    );
  }
}

/** A readiness probe's round trip to the server behind `connection`. */
export async function pingMongo(connection: Connection): Promise<void> {
  const db = connection.db;
  if (!db) throw new Error('MongoDB connection not open');
  await db.admin().ping();
}

/**
 * One page of a cursor list, newest first: the documents matching `filter` whose `key` sorts below
 * `before` (the last key of the previous page; none for the first page), at most `limit`, as plain
 * objects. With `order: 'asc'`, oldest first: `before` is then the key the page starts above. The
 * collection's index on (filter's equality fields, key) serves both (walked backwards for asc).
 */
export function pageBefore<D>(
  model: Model<D>,
  page: {
    filter: FilterQuery<D>;
    key: keyof D & string;
    before: string | undefined;
    limit: number;
    /** Absent: whole documents. */
    projection?: ProjectionType<D>;
    /** Absent: desc (ListOrder). */
    order?: 'asc' | 'desc';
  },
): Promise<D[]> {
  const { filter, key, before, limit, projection, order = 'desc' } = page;
  const past = order === 'asc' ? '$gt' : '$lt';
  const query = before === undefined ? filter : ({ ...filter, [key]: { [past]: before } } as FilterQuery<D>);
  const sort = order === 'asc' ? { [key]: 1 as const } : newestFirst(key);
  return model.find(query, projection).sort(sort).limit(limit).lean<D[]>().exec();
}
