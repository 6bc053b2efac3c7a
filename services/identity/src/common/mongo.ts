import { isDuplicateKeyError, type AuditEvent } from '@mandate/shared';
import { Schema, type Model, type SchemaDefinition, type SchemaOptions } from 'mongoose';

/**
 * Every document may carry `outbox`: audit events of its own changes not yet confirmed by the
 * broker, written by the same single-document insert or update as the change (no transactions).
 */
export interface WithOutbox {
  outbox?: AuditEvent[];
}

const outboxField = { type: [Schema.Types.Mixed], default: undefined };

/**
 * A collection of identity: its fields and the outbox, no version key, indexes built by the
 * store's create() (never by autoIndex), so uniqueness holds before the first request.
 */
export function identitySchema<D extends WithOutbox>(
  collection: string,
  fields: SchemaDefinition<Omit<D, 'outbox'>>,
  options: Pick<SchemaOptions, 'minimize'> = {},
): Schema<D> {
  return new Schema<D>({ ...fields, outbox: outboxField } as SchemaDefinition<D>, {
    collection,
    versionKey: false,
    autoIndex: false,
    ...options,
  });
}

/** Declared last on every schema of identity, after the indexes of its own queries. */
export function indexOutbox(schema: Schema): void {
  // The relay's query ({ 'outbox.id': { $gt: '' } }: only documents with unsent events have keys) and markSent's $in.
  schema.index({ 'outbox.id': 1 });
}

/** The events stored with an insert, or nothing. */
export const withOutbox = (events: AuditEvent[] | undefined) =>
  events && events.length > 0 ? { outbox: events } : {};

/** $push of the events with an update, or nothing. */
export const pushOutbox = (events: AuditEvent[] | undefined) =>
  events && events.length > 0 ? { $push: { outbox: { $each: events } } } : {};

/** Reads never carry the outbox: it is the relay's. */
export const HIDDEN = { _id: 0, outbox: 0 } as const;

export const iso = (d: Date) => d.toISOString();
export const isoOrNull = (d: Date | null | undefined) => (d ? d.toISOString() : null);

/** One insert of a document (and its events); a unique index refusing it becomes `refused(keyPattern)`. */
export async function insertUnique<D>(
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
