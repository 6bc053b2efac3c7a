/** SPEC §5 "Tenants, roles, onboarding": a public request for a tenant, decided by the operator. */
export const ONBOARDING_STATUSES = ['PENDING', 'APPROVED', 'REJECTED'] as const;
export type OnboardingStatus = (typeof ONBOARDING_STATUSES)[number];

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

export const ORGANIZATION_NAME_MAX = 200;
export const USE_CASE_MAX = 1000;
export const REJECTION_REASON_MAX = 500;

/**
 * "Real-looking": a local part of the characters RFC 5322 allows unquoted, a domain of valid DNS
 * labels and an alphabetic TLD. No attempt at full RFC 5322 (quoted local parts, IP literals).
 */
export const EMAIL_PATTERN =
  /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$/;
export const EMAIL_MAX = 254;
export const EMAIL_LOCAL_MAX = 64;

export function isRealLookingEmail(value: string): boolean {
  const at = value.lastIndexOf('@');
  return value.length <= EMAIL_MAX && at > 0 && at <= EMAIL_LOCAL_MAX && EMAIL_PATTERN.test(value);
}
