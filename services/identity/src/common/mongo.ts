import { type AuditEvent } from '@mandate/shared/events';
import {
  WITHOUT_OUTBOX,
  insertOrRefuse,
  pageBefore,
  pushOutbox,
  withOutbox,
  type OutboxDoc,
} from '@mandate/shared/data';
import {
  Schema,
  type FilterQuery,
  type Model,
  type ProjectionType,
  type SchemaDefinition,
  type SchemaOptions,
  type UpdateQuery,
} from 'mongoose';

/**
 * Every document may carry `outbox`: audit events of its own changes not yet confirmed by the
 * broker, written by the same single-document insert or update as the change (no transactions).
 */
export type WithOutbox = OutboxDoc;

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

export const iso = (d: Date) => d.toISOString();
export const isoOrNull = (d: Date | null | undefined) => (d ? d.toISOString() : null);

/**
 * What every Mongo store of identity does with its one collection: a document goes in with its
 * events in the same insert, a change is a guarded update storing its events with it, and lean
 * documents come out as plain domain objects (`out`) without the outbox.
 */
export abstract class CollectionStore<D extends WithOutbox, T> {
  constructor(protected readonly model: Model<D>) {}

  /** The domain object of a document read from the collection. */
  protected abstract out(d: D): T;

  /** One insert of `doc` and its events; a unique index refusing it becomes `refused(keyPattern)`. */
  protected async insertWithEvents(
    doc: Omit<D, 'outbox'>,
    events: AuditEvent[] | undefined,
    refused: (keyPattern: Record<string, unknown>) => Error,
  ): Promise<void> {
    await insertOrRefuse(this.model, { ...doc, ...withOutbox(events) } as D, refused);
  }

  protected async findOneOut(
    filter: FilterQuery<D>,
    projection: ProjectionType<D> = WITHOUT_OUTBOX,
  ): Promise<T | null> {
    const d = await this.model.findOne(filter, projection).lean<D>();
    return d ? this.out(d) : null;
  }

  /** A page of a cursor list, newest first (see pageBefore). */
  protected async pageOut(
    page: { filter: FilterQuery<D>; key: keyof D & string; before: string | undefined; limit: number },
    projection: ProjectionType<D> = WITHOUT_OUTBOX,
  ): Promise<T[]> {
    const docs = await pageBefore(this.model, { ...page, projection });
    return docs.map((d) => this.out(d));
  }

  /**
   * The upsert of the one document `filter` names (a tenant's configuration): `set`, and the events
   * in the same write; inserted when absent.
   */
  protected async upsertWithEvents(
    filter: FilterQuery<D>,
    set: UpdateQuery<D>['$set'],
    events: AuditEvent[] | undefined,
  ): Promise<void> {
    await this.model.updateOne(filter, { $set: set, ...pushOutbox(events) }, { upsert: true });
  }

  /**
   * The guarded write: `set`, and the events in the same update, only where `guard` (the state the
   * caller decided on) still matches. The document as written, or null when it no longer matches.
   */
  protected async updateOut(
    guard: FilterQuery<D>,
    set: UpdateQuery<D>['$set'],
    events?: AuditEvent[],
    projection: ProjectionType<D> = WITHOUT_OUTBOX,
  ): Promise<T | null> {
    const d = await this.model
      .findOneAndUpdate(guard, { $set: set, ...pushOutbox(events) }, { new: true, projection })
      .lean<D>();
    return d ? this.out(d) : null;
  }
}
