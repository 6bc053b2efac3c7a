import { type AuditEvent } from '@mandate/shared/events';
import { queryShapesOf, type MongoQueryShape, type StoredAs } from '@mandate/shared/data';
import { Schema, type FilterQuery } from 'mongoose';
import { DuplicateRecord } from '../common/errors';
import { CollectionStore, identitySchema, indexOutbox, iso, isoOrNull } from '../common/mongo';
import type { Answer, IdentityVerification } from './identity-verification';
import type { IdentityVerificationFilter, IdentityVerificationStore } from './identity-verification-store';
import type { ListOptions } from '../common/store';

export interface IdentityVerificationDoc extends StoredAs<
  IdentityVerification,
  'created_at' | 'expires_at' | 'answered_at' | 'consumed_at' | 'request_served_at'
> {
  /** result.verified_at as a date, for consume's window. */
  verified_at: Date | null;
}

export const identityVerificationSchema = identitySchema<IdentityVerificationDoc>('identity_verifications', {
  id: { type: String, required: true },
  tenant_id: { type: String, required: true },
  purpose: { type: String, required: true },
  status: { type: String, required: true },
  created_at: { type: Date, required: true },
  expires_at: { type: Date, required: true },
  nonce: { type: String, required: true },
  state: { type: String, required: true },
  client_id: { type: String, required: true },
  request_object: { type: String, required: true },
  request_served_at: { type: Date, default: null },
  poll_token_hash: { type: String, default: null },
  answered_at: { type: Date, default: null },
  reason: { type: String, default: null },
  result: { type: Schema.Types.Mixed, default: null },
  verified_at: { type: Date, default: null },
  consumed_by: { type: String, default: null },
  consumed_at: { type: Date, default: null },
});
// getById, answer, serveRequestObject: { id } (status, answered_at, request_served_at, expires_at checked on
// the one document found); get, consume:
// { id } too, tenant_id and the consume preconditions residual; unique so an id names one session.
identityVerificationSchema.index({ id: 1 }, { unique: true });
// list: { tenant_id, id < cursor } sorted { id: -1 }; list?status= (and ?status=&purpose=, purpose
// checked on the documents found): { tenant_id, status, id < cursor }; list?purpose=: { tenant_id, purpose, id < cursor }.
identityVerificationSchema.index({ tenant_id: 1, id: -1 });
identityVerificationSchema.index({ tenant_id: 1, status: 1, id: -1 });
identityVerificationSchema.index({ tenant_id: 1, purpose: 1, id: -1 });
indexOutbox(identityVerificationSchema);

const shapes = queryShapesOf('identity_verifications', 'id');

/** Every query below, for the index-coverage test. */
export const IDENTITY_VERIFICATION_QUERY_SHAPES: MongoQueryShape[] = [
  shapes.find('identityVerifications.get / getById / answer / consume / serveRequestObject', ['id'], {
    residual: [
      'tenant_id',
      'status',
      'answered_at',
      'purpose',
      'consumed_by',
      'verified_at',
      'request_served_at',
      'expires_at',
    ],
  }),
  shapes.page('identityVerifications.list', ['tenant_id']),
  shapes.page('identityVerifications.list?status= (&purpose=)', ['tenant_id', 'status'], {
    residual: ['purpose'],
  }),
  shapes.page('identityVerifications.list?purpose=', ['tenant_id', 'purpose']),
];

export class MongoIdentityVerificationStore
  extends CollectionStore<IdentityVerificationDoc, IdentityVerification>
  implements IdentityVerificationStore
{
  async insert(record: IdentityVerification, outbox?: AuditEvent[]): Promise<void> {
    const doc = {
      ...record,
      created_at: new Date(record.created_at),
      expires_at: new Date(record.expires_at),
      answered_at: record.answered_at ? new Date(record.answered_at) : null,
      request_served_at: record.request_served_at ? new Date(record.request_served_at) : null,
      verified_at: record.result ? new Date(record.result.verified_at) : null,
      consumed_at: record.consumed_at ? new Date(record.consumed_at) : null,
    };
    await this.insertWithEvents(doc, outbox, () => new DuplicateRecord('Identity verification'));
  }

  get(tenantId: string, id: string): Promise<IdentityVerification | null> {
    return this.findOneOut({ id, tenant_id: tenantId });
  }

  getById(id: string): Promise<IdentityVerification | null> {
    return this.findOneOut({ id });
  }

  list(
    tenantId: string,
    { limit, before, status, purpose }: ListOptions & IdentityVerificationFilter,
  ): Promise<IdentityVerification[]> {
    const filter: FilterQuery<IdentityVerificationDoc> = { tenant_id: tenantId };
    if (status !== undefined) filter.status = status;
    if (purpose !== undefined) filter.purpose = purpose;
    return this.pageOut({ filter, key: 'id', before, limit });
  }

  serveRequestObject(id: string, at: string): Promise<IdentityVerification | null> {
    const when = new Date(at);
    // The guard: pending, unexpired, never served; of concurrent fetches one finds the document still matching.
    return this.updateOut(
      { id, status: 'PENDING', request_served_at: null, expires_at: { $gt: when } },
      { request_served_at: when },
    );
  }

  answer(id: string, answer: Answer, outbox?: AuditEvent[]): Promise<IdentityVerification | null> {
    const set =
      answer.status === 'VERIFIED'
        ? {
            status: 'VERIFIED',
            answered_at: new Date(answer.answered_at),
            result: answer.result,
            verified_at: new Date(answer.result.verified_at),
          }
        : { status: 'FAILED', answered_at: new Date(answer.answered_at), reason: answer.reason };
    // The guard: still PENDING and unanswered; the answer and its events land together or not at all.
    return this.updateOut({ id, status: 'PENDING', answered_at: null }, set, outbox);
  }

  consume(
    tenantId: string,
    id: string,
    use: { by: string; at: string; purpose: 'mandate' | 'sign_in'; verifiedAtOrAfter: string },
  ): Promise<IdentityVerification | null> {
    return this.updateOut(
      {
        id,
        tenant_id: tenantId,
        status: 'VERIFIED',
        purpose: use.purpose,
        consumed_by: null,
        verified_at: { $gte: new Date(use.verifiedAtOrAfter) },
      },
      { consumed_by: use.by, consumed_at: new Date(use.at) },
    );
  }

  protected out(d: IdentityVerificationDoc): IdentityVerification {
    return {
      id: d.id,
      tenant_id: d.tenant_id,
      purpose: d.purpose,
      status: d.status,
      created_at: iso(d.created_at),
      expires_at: iso(d.expires_at),
      nonce: d.nonce,
      state: d.state,
      client_id: d.client_id,
      request_object: d.request_object,
      request_served_at: isoOrNull(d.request_served_at),
      poll_token_hash: d.poll_token_hash ?? null,
      answered_at: isoOrNull(d.answered_at),
      reason: d.reason ?? null,
      result: d.result ? structuredClone(d.result) : null,
      consumed_by: d.consumed_by ?? null,
      consumed_at: isoOrNull(d.consumed_at),
    };
  }
}
