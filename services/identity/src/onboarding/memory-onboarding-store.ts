import { takeMatching } from '@mandate/shared/core';
import { type AuditEvent, type MemoryOutbox } from '@mandate/shared/events';
import { FilterIndexes } from '@mandate/shared/data';
import { DuplicateRecord } from '../common/errors';
import type { OnboardingRequest, OnboardingStatus } from './onboarding';
import type { OnboardingListOptions, OnboardingStore } from './onboarding-store';

export class MemoryOnboardingStore implements OnboardingStore {
  private readonly requests = new Map<string, OnboardingRequest>();
  /** Request ids sorted: all, by status */
  private readonly ids = new FilterIndexes<{ status: OnboardingStatus }>();

  constructor(private readonly outbox: MemoryOutbox) {}

  async insert(request: OnboardingRequest, outbox?: AuditEvent[]): Promise<void> {
    if (this.requests.has(request.id)) throw new DuplicateRecord('Onboarding request');
    this.requests.set(request.id, structuredClone(request));
    this.ids.add(request.id, { status: request.status });
    this.outbox.add(`onboarding:${request.id}`, outbox);
  }

  async get(id: string): Promise<OnboardingRequest | null> {
    const r = this.requests.get(id);
    return r ? structuredClone(r) : null;
  }

  async list({ limit, before, status }: OnboardingListOptions): Promise<OnboardingRequest[]> {
    const walk = status === undefined ? this.ids.all : this.ids.under('status', status);
    if (!walk) return [];
    return takeMatching(walk.newestFirst(before), () => true, limit).map((id) =>
      structuredClone(this.requests.get(id)!),
    );
  }

  async decide(decided: OnboardingRequest, outbox?: AuditEvent[]): Promise<OnboardingRequest | null> {
    const r = this.requests.get(decided.id);
    if (!r || r.status !== 'PENDING') return null;
    this.ids.move(r.id, 'status', r.status, decided.status);
    r.status = decided.status;
    r.decided_at = decided.decided_at;
    r.tenant_id = decided.tenant_id;
    r.rejection_reason = decided.rejection_reason;
    this.outbox.add(`onboarding:${r.id}`, outbox);
    return structuredClone(r);
  }
}
