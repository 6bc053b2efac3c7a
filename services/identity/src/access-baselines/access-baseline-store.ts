import type { AuditEvent } from '@mandate/shared/events';
import type { AccessBaseline } from './access-baseline';

export interface AccessBaselineStore {
  /** null until the tenant saves one. */
  get(tenantId: string): Promise<AccessBaseline | null>;
  /**
   * The guarded upsert: stores `baseline` (and its events) in place of the tenant's, unless the
   * stored one was saved later (a concurrent save that read a newer state wins). True when it
   * was written; false when a later baseline is kept.
   */
  put(baseline: AccessBaseline, outbox?: AuditEvent[]): Promise<boolean>;
}
