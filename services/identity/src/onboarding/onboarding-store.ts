import type { AuditEvent } from '@mandate/shared/events';
import type { ListOptions } from '../common/store';
import type { OnboardingRequest, OnboardingStatus } from './onboarding';

/** A page of the requests, optionally only those in one status (the operator's queue). */
export type OnboardingListOptions = ListOptions & { status?: OnboardingStatus };

/** Onboarding requests precede any tenant: they are the platform's, not a tenant's. */
export interface OnboardingStore {
  /** Stores the request and its events in one insert; a duplicate id is DuplicateRecord. */
  insert(request: OnboardingRequest, outbox?: AuditEvent[]): Promise<void>;
  get(id: string): Promise<OnboardingRequest | null>;
  list(options: OnboardingListOptions): Promise<OnboardingRequest[]>;
  /**
   * The guarded write of a decision: stores `decided`'s status, decided_at, tenant_id and
   * rejection_reason with its events, only while the request is still PENDING (two operators
   * deciding at once: one wins). The request as written, or null when absent or already decided.
   */
  decide(decided: OnboardingRequest, outbox?: AuditEvent[]): Promise<OnboardingRequest | null>;
}
