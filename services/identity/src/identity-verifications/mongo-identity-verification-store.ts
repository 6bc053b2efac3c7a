import { pageBefore, queryShapesOf, type AuditEvent, type MongoQueryShape } from '@mandate/shared';
import { Schema, type Model } from 'mongoose';
import { DuplicateRecord } from '../common/errors';
import {
  HIDDEN,
  identitySchema,
  indexOutbox,
  insertUnique,
  iso,
  isoOrNull,
  pushOutbox,
  withOutbox,
  type WithOutbox,
} from '../common/mongo';
import type {
  Answer,
  IdentityVerification,
  IdentityVerificationPurpose,
  IdentityVerificationReason,
  IdentityVerificationStatus,
  VerificationResult,
} from './identity-verification';
import type { IdentityVerificationFilter, IdentityVerificationStore } from './identity-verification-store';
import type { ListOptions } from '../common/store';

export interface IdentityVerificationDoc extends WithOutbox {
  id: string;
  tenant_id: string;
  purpose: IdentityVerificationPurpose;
  status: IdentityVerificationStatus;
  created_at: Date;
  expires_at: Date;
  nonce: string;
  state: string;
  client_id: string;
  request_object: string;
  poll_token_hash: string | null;
  answered_at: Date | null;
  reason: IdentityVerificationReason | null;
  result: VerificationResult | null;
  /** result.verified_at as a date, for consume's window. */
  verified_at: Date | null;
  consumed_by: string | null;
  consumed_at: Date | null;
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
  poll_token_hash: { type: String, default: null },
  answered_at: { type: Date, default: null },
  reason: { type: String, default: null },
  result: { type: Schema.Types.Mixed, default: null },
  verified_at: { type: Date, default: null },
  consumed_by: { type: String, default: null },
  consumed_at: { type: Date, default: null },
});
// getById, answer: { id } (status, answered_at checked on the one document found); get, consume:
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
  shapes.find('identityVerifications.get / getById / answer / consume', ['id'], {
    residual: ['tenant_id', 'status', 'answered_at', 'purpose', 'consumed_by', 'verified_at'],
  }),
  shapes.page('identityVerifications.list', ['tenant_id']),
  shapes.page('identityVerifications.list?status= (&purpose=)', ['tenant_id', 'status'], {
    residual: ['purpose'],
  }),
  shapes.page('identityVerifications.list?purpose=', ['tenant_id', 'purpose']),
];

function out(d: IdentityVerificationDoc): IdentityVerification {
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
    poll_token_hash: d.poll_token_hash ?? null,
    answered_at: isoOrNull(d.answered_at),
    reason: d.reason ?? null,
    result: d.result ? structuredClone(d.result) : null,
    consumed_by: d.consumed_by ?? null,
    consumed_at: isoOrNull(d.consumed_at),
  };
}

export class MongoIdentityVerificationStore implements IdentityVerificationStore {
  constructor(private readonly sessions: Model<IdentityVerificationDoc>) {}

  async insert(record: IdentityVerification, outbox?: AuditEvent[]): Promise<void> {
    const doc: IdentityVerificationDoc = {
      ...record,
      created_at: new Date(record.created_at),
      expires_at: new Date(record.expires_at),
      answered_at: record.answered_at ? new Date(record.answered_at) : null,
      verified_at: record.result ? new Date(record.result.verified_at) : null,
      consumed_at: record.consumed_at ? new Date(record.consumed_at) : null,
      ...withOutbox(outbox),
    };
    await insertUnique(this.sessions, doc, () => new DuplicateRecord('Identity verification'));
  }

  async get(tenantId: string, id: string): Promise<IdentityVerification | null> {
    const d = await this.sessions
      .findOne({ id, tenant_id: tenantId }, HIDDEN)
      .lean<IdentityVerificationDoc>();
    return d ? out(d) : null;
  }

  async getById(id: string): Promise<IdentityVerification | null> {
    const d = await this.sessions.findOne({ id }, HIDDEN).lean<IdentityVerificationDoc>();
    return d ? out(d) : null;
  }

  async list(
    tenantId: string,
    { limit, before, status, purpose }: ListOptions & IdentityVerificationFilter,
  ): Promise<IdentityVerification[]> {
    const filter: Record<string, unknown> = { tenant_id: tenantId };
    if (status !== undefined) filter.status = status;
    if (purpose !== undefined) filter.purpose = purpose;
    const docs = await pageBefore(this.sessions, { filter, key: 'id', before, limit, projection: HIDDEN });
    return docs.map(out);
  }

  async answer(id: string, answer: Answer, outbox?: AuditEvent[]): Promise<IdentityVerification | null> {
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
    const d = await this.sessions
      .findOneAndUpdate(
        { id, status: 'PENDING', answered_at: null },
        { $set: set, ...pushOutbox(outbox) },
        { new: true, projection: HIDDEN },
      )
      .lean<IdentityVerificationDoc>();
    return d ? out(d) : null;
  }

  async consume(
    tenantId: string,
    id: string,
    use: { by: string; at: string; purpose: 'mandate' | 'sign_in'; verifiedAtOrAfter: string },
  ): Promise<IdentityVerification | null> {
    const d = await this.sessions
      .findOneAndUpdate(
        {
          id,
          tenant_id: tenantId,
          status: 'VERIFIED',
          purpose: use.purpose,
          consumed_by: null,
          verified_at: { $gte: new Date(use.verifiedAtOrAfter) },
        },
        { $set: { consumed_by: use.by, consumed_at: new Date(use.at) } },
        { new: true, projection: HIDDEN },
      )
      .lean<IdentityVerificationDoc>();
    return d ? out(d) : null;
  }
}
