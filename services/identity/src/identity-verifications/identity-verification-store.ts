import type { AuditEvent } from '@mandate/shared';
import type { Answer, IdentityVerification } from './identity-verification';

export interface IdentityVerificationStore {
  insert(record: IdentityVerification, outbox?: AuditEvent[]): Promise<void>;
  get(tenantId: string, id: string): Promise<IdentityVerification | null>;
  /** The wallet's routes carry no tenant: the id alone (unique across tenants). */
  getById(id: string): Promise<IdentityVerification | null>;
  /**
   * The one guarded write of an answer: stores it (and its events) only while the session is still
   * PENDING and unanswered. Null when another answer got there first: two concurrent answers never both pass.
   */
  answer(id: string, answer: Answer, outbox?: AuditEvent[]): Promise<IdentityVerification | null>;
  /**
   * Marks a VERIFIED session of `purpose` used by `by`, only if it is unused and was verified at or
   * after `verifiedAtOrAfter`. Null when any of that no longer holds.
   */
  consume(
    tenantId: string,
    id: string,
    use: { by: string; at: string; purpose: 'mandate' | 'sign_in'; verifiedAtOrAfter: string },
  ): Promise<IdentityVerification | null>;
}
