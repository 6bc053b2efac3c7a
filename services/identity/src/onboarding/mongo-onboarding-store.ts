import { pageBefore, queryShapesOf, type AuditEvent, type MongoQueryShape } from '@mandate/shared';
import type { Model } from 'mongoose';
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
import type { ListOptions } from '../common/store';
import type { OnboardingRequest, OnboardingStatus } from './onboarding';
import type { OnboardingStore } from './onboarding-store';

export interface OnboardingDoc extends WithOutbox {
  request_id: string;
  organization_name: string;
  contact_email: string;
  country: string | null;
  use_case: string | null;
  status: OnboardingStatus;
  created_at: Date;
  decided_at: Date | null;
  tenant_id: string | null;
  rejection_reason: string | null;
}

export const onboardingSchema = identitySchema<OnboardingDoc>('onboarding_requests', {
  request_id: { type: String, required: true },
  organization_name: { type: String, required: true },
  contact_email: { type: String, required: true },
  country: { type: String, default: null },
  use_case: { type: String, default: null },
  status: { type: String, required: true },
  created_at: { type: Date, required: true },
  decided_at: { type: Date, default: null },
  tenant_id: { type: String, default: null },
  rejection_reason: { type: String, default: null },
});
// get, decide: { request_id } (status checked on the one document found);
// list without filters: { request_id < cursor } sorted { request_id: -1 }, walked backwards.
onboardingSchema.index({ request_id: 1 }, { unique: true });
// list?status=: { status, request_id < cursor } sorted { request_id: -1 }, the operator's queue.
onboardingSchema.index({ status: 1, request_id: -1 });
indexOutbox(onboardingSchema);

const shapes = queryShapesOf('onboarding_requests', 'request_id');

/** Every query below, for the index-coverage test. */
export const ONBOARDING_QUERY_SHAPES: MongoQueryShape[] = [
  shapes.find('onboarding.get / decide', ['request_id'], { residual: ['status'] }),
  shapes.page('onboarding.list', []),
  shapes.page('onboarding.list?status=', ['status']),
];

function onboardingOut(d: OnboardingDoc): OnboardingRequest {
  return {
    id: d.request_id,
    organization_name: d.organization_name,
    contact_email: d.contact_email,
    country: d.country ?? null,
    use_case: d.use_case ?? null,
    status: d.status,
    created_at: iso(d.created_at),
    decided_at: isoOrNull(d.decided_at),
    tenant_id: d.tenant_id ?? null,
    rejection_reason: d.rejection_reason ?? null,
  };
}

export class MongoOnboardingStore implements OnboardingStore {
  constructor(private readonly requests: Model<OnboardingDoc>) {}

  async insert(r: OnboardingRequest, outbox?: AuditEvent[]): Promise<void> {
    const doc = {
      request_id: r.id,
      organization_name: r.organization_name,
      contact_email: r.contact_email,
      country: r.country,
      use_case: r.use_case,
      status: r.status,
      created_at: new Date(r.created_at),
      decided_at: r.decided_at ? new Date(r.decided_at) : null,
      tenant_id: r.tenant_id,
      rejection_reason: r.rejection_reason,
      ...withOutbox(outbox),
    };
    await insertUnique(this.requests, doc, () => new DuplicateRecord('Onboarding request'));
  }

  async get(id: string): Promise<OnboardingRequest | null> {
    const d = await this.requests.findOne({ request_id: id }, HIDDEN).lean<OnboardingDoc>();
    return d ? onboardingOut(d) : null;
  }

  async list({
    limit,
    before,
    status,
  }: ListOptions & { status?: OnboardingStatus }): Promise<OnboardingRequest[]> {
    const docs = await pageBefore(this.requests, {
      filter: status === undefined ? {} : { status },
      key: 'request_id',
      before,
      limit,
      projection: HIDDEN,
    });
    return docs.map(onboardingOut);
  }

  async decide(decided: OnboardingRequest, outbox?: AuditEvent[]): Promise<OnboardingRequest | null> {
    // PENDING in the filter is the compare-and-set: one decision wins, and only it stores its event.
    const d = await this.requests
      .findOneAndUpdate(
        { request_id: decided.id, status: 'PENDING' },
        {
          $set: {
            status: decided.status,
            decided_at: decided.decided_at ? new Date(decided.decided_at) : null,
            tenant_id: decided.tenant_id,
            rejection_reason: decided.rejection_reason,
          },
          ...pushOutbox(outbox),
        },
        { new: true, projection: HIDDEN },
      )
      .lean<OnboardingDoc>();
    return d ? onboardingOut(d) : null;
  }
}
