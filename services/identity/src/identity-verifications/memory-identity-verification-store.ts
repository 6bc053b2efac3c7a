import { SortedById, takeMatching } from '@mandate/shared/core';
import { type AuditEvent, type MemoryOutbox } from '@mandate/shared/events';
import { DuplicateRecord } from '../common/errors';
import type { ListOptions } from '../common/store';
import type { Answer, IdentityVerification } from './identity-verification';
import type { IdentityVerificationFilter, IdentityVerificationStore } from './identity-verification-store';

export class MemoryIdentityVerificationStore implements IdentityVerificationStore {
  /** id → record (ids are unique across tenants). */
  private readonly sessions = new Map<string, IdentityVerification>();
  /** tenant_id → its session ids sorted (filters are checked on the sessions walked). */
  private readonly tenantIds = new Map<string, SortedById<string>>();

  constructor(private readonly outbox: MemoryOutbox) {}

  async insert(record: IdentityVerification, outbox?: AuditEvent[]): Promise<void> {
    if (this.sessions.has(record.id)) throw new DuplicateRecord('Identity verification');
    this.sessions.set(record.id, structuredClone(record));
    SortedById.idsUnder(this.tenantIds, record.tenant_id).insert(record.id);
    this.outbox.add(`identity_verification:${record.id}`, outbox);
  }

  async get(tenantId: string, id: string): Promise<IdentityVerification | null> {
    const r = this.sessions.get(id);
    return r && r.tenant_id === tenantId ? structuredClone(r) : null;
  }

  async getById(id: string): Promise<IdentityVerification | null> {
    const r = this.sessions.get(id);
    return r ? structuredClone(r) : null;
  }

  async list(
    tenantId: string,
    { limit, before, status, purpose }: ListOptions & IdentityVerificationFilter,
  ): Promise<IdentityVerification[]> {
    const ids = this.tenantIds.get(tenantId);
    if (!ids) return [];
    const matches = (id: string) => {
      const r = this.sessions.get(id)!;
      return (
        (status === undefined || r.status === status) && (purpose === undefined || r.purpose === purpose)
      );
    };
    return takeMatching(ids.newestFirst(before), matches, limit).map((id) =>
      structuredClone(this.sessions.get(id)!),
    );
  }

  async serveRequestObject(id: string, at: string): Promise<IdentityVerification | null> {
    const r = this.sessions.get(id);
    if (
      !r ||
      r.status !== 'PENDING' ||
      r.request_served_at !== null ||
      Date.parse(r.expires_at) <= Date.parse(at)
    )
      return null;
    r.request_served_at = at;
    return structuredClone(r);
  }

  async answer(id: string, answer: Answer, outbox?: AuditEvent[]): Promise<IdentityVerification | null> {
    const r = this.sessions.get(id);
    if (!r || r.status !== 'PENDING' || r.answered_at !== null) return null;
    r.status = answer.status;
    r.answered_at = answer.answered_at;
    if (answer.status === 'VERIFIED') r.result = structuredClone(answer.result);
    else r.reason = answer.reason;
    this.outbox.add(`identity_verification:${id}`, outbox);
    return structuredClone(r);
  }

  async consume(
    tenantId: string,
    id: string,
    use: { by: string; at: string; purpose: 'mandate' | 'sign_in'; verifiedAtOrAfter: string },
  ): Promise<IdentityVerification | null> {
    const r = this.sessions.get(id);
    if (
      !r ||
      r.tenant_id !== tenantId ||
      r.status !== 'VERIFIED' ||
      r.purpose !== use.purpose ||
      r.consumed_by !== null ||
      !r.result ||
      Date.parse(r.result.verified_at) < Date.parse(use.verifiedAtOrAfter)
    )
      return null;
    r.consumed_by = use.by;
    r.consumed_at = use.at;
    return structuredClone(r);
  }
}
