import type { OutboxStore } from '@mandate/shared/events';
import type { CredentialChangeStore } from '../credential-changes/credential-change-store';
import type { AccessBaselineStore } from '../access-baselines/access-baseline-store';
import type { ApiKeyStore } from '../api-keys/api-key-store';
import type { IdentityVerificationStore } from '../identity-verifications/identity-verification-store';
import type { OnboardingStore } from '../onboarding/onboarding-store';
import type { RoleAssignmentStore } from '../role-assignments/role-assignment-store';
import type { TenantStore } from '../tenants/tenant-store';
import type { WidgetConfigStore } from '../widget-config/widget-config-store';

/**
 * Everything identity persists: one store per aggregate, each in its folder. Tenant-scoped
 * functions take tenantId first. Reads return plain objects; uniqueness is decided by the
 * database (unique indexes), a refused write surfaces as a domain conflict.
 *
 * Writes: the domain reads, decides the new state and its events, then the store performs one
 * write that stores both (each event rides on the document whose change it records; no
 * transactions). A conditional write carries its precondition in the filter and answers null
 * when it no longer holds. The outbox (OutboxStore) spans every aggregate: a relay publishes
 * the stored events and removes them once the broker confirmed.
 */
export interface IdentityStore extends OutboxStore {
  readonly tenants: TenantStore;
  readonly apiKeys: ApiKeyStore;
  readonly roleAssignments: RoleAssignmentStore;
  readonly onboarding: OnboardingStore;
  readonly widgetConfigs: WidgetConfigStore;
  readonly identityVerifications: IdentityVerificationStore;
  readonly accessBaselines: AccessBaselineStore;
  /** The credential epoch the gateways check (docs/DECISIONS.md, "Credential changes"). */
  readonly credentialChanges: CredentialChangeStore;
  /** Throws when the backing database is unreachable (readiness). */
  ping(): Promise<void>;
}
