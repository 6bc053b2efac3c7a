import { type AuditEvent } from '@mandate/shared/events';
import { queryShapesOf, type MongoQueryShape, type StoredAs } from '@mandate/shared/data';
import { DuplicateRecord } from '../common/errors';
import { CollectionStore, identitySchema, indexOutbox, iso, isoOrNull } from '../common/mongo';
import type { OnboardingRequest } from './onboarding';
import type { OnboardingListOptions, OnboardingStore } from './onboarding-store';

export interface OnboardingDoc extends StoredAs<OnboardingRequest, 'created_at' | 'decided_at', 'id'> {
  request_id: string;
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

export class MongoOnboardingStore
  extends CollectionStore<OnboardingDoc, OnboardingRequest>
  implements OnboardingStore
{
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
    };
    await this.insertWithEvents(doc, outbox, () => new DuplicateRecord('Onboarding request'));
  }

  get(id: string): Promise<OnboardingRequest | null> {
    return this.findOneOut({ request_id: id });
  }

  list({ limit, before, status }: OnboardingListOptions): Promise<OnboardingRequest[]> {
    return this.pageOut({ filter: status === undefined ? {} : { status }, key: 'request_id', before, limit });
  }

  decide(decided: OnboardingRequest, outbox?: AuditEvent[]): Promise<OnboardingRequest | null> {
    // PENDING in the filter is the compare-and-set: one decision wins, and only it stores its event.
    return this.updateOut(
      { request_id: decided.id, status: 'PENDING' },
      {
        status: decided.status,
        decided_at: decided.decided_at ? new Date(decided.decided_at) : null,
        tenant_id: decided.tenant_id,
        rejection_reason: decided.rejection_reason,
      },
      outbox,
    );
  }

  protected out(d: OnboardingDoc): OnboardingRequest {
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
}
