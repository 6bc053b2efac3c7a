import type { AuditEvent } from '@mandate/shared/events';
import type { ListOptions } from '../common/store';
import type {
  Answer,
  IdentityVerification,
  IdentityVerificationPurpose,
  IdentityVerificationStatus,
} from './identity-verification';

/** The filters of list: a status, a purpose, or both. */
export interface IdentityVerificationFilter {
  status?: IdentityVerificationStatus;
  purpose?: IdentityVerificationPurpose;
}

export interface IdentityVerificationStore {
  insert(record: IdentityVerification, outbox?: AuditEvent[]): Promise<void>;
  get(tenantId: string, id: string): Promise<IdentityVerification | null>;
  /** The wallet's routes carry no tenant: the id alone (unique across tenants). */
  getById(id: string): Promise<IdentityVerification | null>;
  /** The tenant's sessions, newest first, optionally of one status and/or purpose. */
  list(tenantId: string, options: ListOptions & IdentityVerificationFilter): Promise<IdentityVerification[]>;
  /**
   * Marks the request object served at `at`, only while the session is PENDING, unexpired at `at` and
   * its request object not yet served. The session as written, or null: a request object is served once.
   */
  serveRequestObject(id: string, at: string): Promise<IdentityVerification | null>;
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
