import { isDuplicateKeyError, queryShapesOf, type MongoQueryShape } from '@mandate/shared/data';
import { Schema, type Model } from 'mongoose';
import {
  RECENT_CHANGES_MAX,
  changesAfter,
  type ChangesSince,
  type CredentialChange,
  type CredentialChangeStore,
} from './credential-change-store';

/** The one epoch document: the counter and the last RECENT_CHANGES_MAX changes, the last one at `epoch`. */
export interface CredentialEpochDoc {
  _id: string;
  epoch: number;
  recent: CredentialChange[];
}

const EPOCH_ID = 'credentials';

/**
 * One document, so a change moves the counter and appends itself in one atomic update: the change
 * at position i from the end is at epoch `epoch - i`, whatever the concurrency. No outbox: the
 * changes it records are audited by the documents that changed.
 */
export const credentialEpochSchema = new Schema<CredentialEpochDoc>(
  {
    _id: { type: String, required: true },
    epoch: { type: Number, required: true },
    recent: {
      type: [new Schema({ kind: String, tenant_id: String, id: String }, { _id: false })],
      default: [],
    },
  },
  { collection: 'credential_epoch', versionKey: false, autoIndex: false },
);
// record, since: { _id } (the default index).

/** Every query below, for the index-coverage test. */
export const CREDENTIAL_EPOCH_QUERY_SHAPES: MongoQueryShape[] = [
  queryShapesOf('credential_epoch').find('credentialChanges.record / since', ['_id']),
];

export class MongoCredentialChangeStore implements CredentialChangeStore {
  constructor(private readonly model: Model<CredentialEpochDoc>) {}

  async record(changes: CredentialChange[]): Promise<number> {
    const update = {
      $inc: { epoch: changes.length },
      $push: { recent: { $each: changes, $slice: -RECENT_CHANGES_MAX } },
    };
    // The first change ever inserts the document; of two such upserts at once, one may lose on _id: again.
    for (let attempt = 0; ; attempt++) {
      try {
        const doc = await this.model
          .findOneAndUpdate({ _id: EPOCH_ID }, update, { upsert: true, new: true, projection: { epoch: 1 } })
          .lean<Pick<CredentialEpochDoc, 'epoch'>>();
        return doc!.epoch;
      } catch (err) {
        if (!isDuplicateKeyError(err) || attempt > 0) throw err;
      }
    }
  }

  async since(since?: number): Promise<ChangesSince> {
    // Read the counter alone first: on almost every call nothing changed, and the list is not read.
    const head = await this.model
      .findOne({ _id: EPOCH_ID }, { epoch: 1 })
      .lean<Pick<CredentialEpochDoc, 'epoch'>>();
    const epoch = head?.epoch ?? 0;
    if (since === epoch) return { epoch, changes: [] };
    if (!head || since === undefined || since > epoch) return { epoch, changes: null };
    const doc = await this.model.findOne({ _id: EPOCH_ID }).lean<CredentialEpochDoc>();
    return { epoch: doc!.epoch, changes: changesAfter(doc!.epoch, doc!.recent, since) };
  }
}
