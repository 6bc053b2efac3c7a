import { MemoryOutbox, type AuditEvent } from '@mandate/shared/events';
import { MemoryAccessBaselineStore } from '../access-baselines/memory-access-baseline-store';
import { MemoryApiKeyStore } from '../api-keys/memory-api-key-store';
import { MemoryCredentialChangeStore } from '../credential-changes/memory-credential-change-store';
import { MemoryIdentityVerificationStore } from '../identity-verifications/memory-identity-verification-store';
import { MemoryOnboardingStore } from '../onboarding/memory-onboarding-store';
import { MemoryRoleAssignmentStore } from '../role-assignments/memory-role-assignment-store';
import { MemoryTenantStore } from '../tenants/memory-tenant-store';
import { MemoryWidgetConfigStore } from '../widget-config/memory-widget-config-store';
import type { IdentityStore } from './identity-store';

/**
 * The embedded mode's store: the aggregates' memory stores over one outbox. Each keys its maps
 * the way the Mongo unique indexes are, so the same writes are refused, and clones values in and
 * out so callers never share state with it.
 */
export class MemoryIdentityStore implements IdentityStore {
  /** Unsent events by record ("collection:key"). */
  private readonly outbox = new MemoryOutbox();
  readonly tenants = new MemoryTenantStore(this.outbox);
  readonly apiKeys = new MemoryApiKeyStore(this.outbox);
  readonly roleAssignments = new MemoryRoleAssignmentStore(this.outbox);
  readonly onboarding = new MemoryOnboardingStore(this.outbox);
  readonly widgetConfigs = new MemoryWidgetConfigStore(this.outbox);
  readonly identityVerifications = new MemoryIdentityVerificationStore(this.outbox);
  readonly accessBaselines = new MemoryAccessBaselineStore(this.outbox);
  readonly credentialChanges = new MemoryCredentialChangeStore();

  async pendingEvents(limit: number): Promise<AuditEvent[]> {
    return this.outbox.events(limit);
  }

  async markSent(eventIds: string[]): Promise<void> {
    this.outbox.markSent(eventIds);
  }

  async ping(): Promise<void> {}
}
