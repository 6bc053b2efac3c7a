import { AppError } from '@mandate/shared/core';

/** docs/API.md, "Tenants, role assignments, onboarding, widget": a public request for a tenant, decided by the operator. */
import type { OnboardingStatus } from '../contract/wire';
// Wire vocabulary and checks: the contract's.
export {
  EMAIL_LOCAL_MAX,
  EMAIL_MAX,
  EMAIL_PATTERN,
  ONBOARDING_STATUSES,
  ORGANIZATION_NAME_MAX,
  REJECTION_REASON_MAX,
  USE_CASE_MAX,
  isRealLookingEmail,
  type OnboardingStatus,
} from '../contract/wire';

export interface OnboardingRequest {
  id: string;
  organization_name: string;
  contact_email: string;
  country: string | null;
  use_case: string | null;
  status: OnboardingStatus;
  created_at: string;
  decided_at: string | null;
  /** The tenant an approval created. */
  tenant_id: string | null;
  rejection_reason: string | null;
}

export class OnboardingRequestNotFound extends AppError {
  constructor() {
    super('NOT_FOUND', 'Onboarding request not found');
  }
}

/** Approve or reject of a request that was already decided. */
export class OnboardingAlreadyDecided extends AppError {
  constructor(status: string) {
    super('CONFLICT', `Onboarding request is already ${status.toLowerCase()}`);
  }
}

/** An operator's decision on a pending request. */
export type OnboardingDecision =
  | { status: 'APPROVED'; at: string; /** The tenant the approval creates. */ tenantId: string }
  | { status: 'REJECTED'; at: string; reason?: string };

/** The request as the decision leaves it: only the decision fields change. */
export function decided(pending: OnboardingRequest, decision: OnboardingDecision): OnboardingRequest {
  return {
    ...pending,
    status: decision.status,
    decided_at: decision.at,
    tenant_id: decision.status === 'APPROVED' ? decision.tenantId : null,
    rejection_reason: decision.status === 'REJECTED' ? (decision.reason ?? null) : null,
  };
}
