import mongoose, { type Connection } from 'mongoose';
import type { Logger } from './logger';
import { redactUrl } from './redact-url';

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
