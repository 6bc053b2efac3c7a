import mongoose, { type Connection } from 'mongoose';
import type { Logger } from './logger';
import { redactUrl } from './bus/rabbitmq';

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
