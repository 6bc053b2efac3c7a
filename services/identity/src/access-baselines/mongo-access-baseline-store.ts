import { type Actor } from '@mandate/shared/core';
import { type AuditEvent } from '@mandate/shared/events';
import {
  isDuplicateKeyError,
  queryShapesOf,
  type MongoQueryShape,
  type StoredAs,
} from '@mandate/shared/data';
import { Schema } from 'mongoose';
import { CollectionStore, identitySchema, indexOutbox, iso } from '../common/mongo';
import type { AccessBaseline } from './access-baseline';
import type { AccessBaselineStore } from './access-baseline-store';

export type AccessBaselineDoc = StoredAs<AccessBaseline, 'saved_at'>;

export const accessBaselineSchema = identitySchema<AccessBaselineDoc>(
  'access_baselines',
  {
    tenant_id: { type: String, required: true },
    saved_at: { type: Date, required: true },
    saved_by: { type: Schema.Types.Mixed, required: true },
    snapshot: { type: Schema.Types.Mixed, required: true },
  },
  // Empty lists and an actor without ids are stored as given.
  { minimize: false },
);
// get, put (guarded upsert): { tenant_id } (saved_at checked on the one document found); unique, so
// a tenant has one baseline and two concurrent first saves cannot both insert.
accessBaselineSchema.index({ tenant_id: 1 }, { unique: true });
indexOutbox(accessBaselineSchema);

const shapes = queryShapesOf('access_baselines');

/** Every query below, for the index-coverage test. */
export const ACCESS_BASELINE_QUERY_SHAPES: MongoQueryShape[] = [
  shapes.find('accessBaselines.get / put', ['tenant_id'], { residual: ['saved_at'] }),
];

export class MongoAccessBaselineStore
  extends CollectionStore<AccessBaselineDoc, AccessBaseline>
  implements AccessBaselineStore
{
  get(tenantId: string): Promise<AccessBaseline | null> {
    return this.findOneOut({ tenant_id: tenantId });
  }

  async put(baseline: AccessBaseline, outbox?: AuditEvent[]): Promise<boolean> {
    const savedAt = new Date(baseline.saved_at);
    // Matches the tenant's baseline only while it was saved at or before this one; absent, the
    // upsert inserts. A later one present makes the upsert's insert hit the unique index.
    const write = () =>
      this.upsertWithEvents(
        { tenant_id: baseline.tenant_id, saved_at: { $lte: savedAt } },
        { saved_at: savedAt, saved_by: baseline.saved_by, snapshot: baseline.snapshot },
        outbox,
      );
    try {
      await write();
      return true;
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
    }
    // A duplicate key: either a later baseline is stored, or a concurrent first save inserted
    // between our filter and our insert. Once more decides: now the filter sees the stored one.
    try {
      await write();
      return true;
    } catch (err) {
      if (isDuplicateKeyError(err)) return false;
      throw err;
    }
  }

  protected out(d: AccessBaselineDoc): AccessBaseline {
    const saved_by: Actor = { type: d.saved_by.type };
    if (d.saved_by.key_id !== undefined) saved_by.key_id = d.saved_by.key_id;
    if (d.saved_by.subject_id !== undefined) saved_by.subject_id = d.saved_by.subject_id;
    return {
      tenant_id: d.tenant_id,
      saved_at: iso(d.saved_at),
      saved_by,
      snapshot: structuredClone(d.snapshot),
    };
  }
}
