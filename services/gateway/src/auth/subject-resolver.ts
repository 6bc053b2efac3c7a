import { CachedIdentityLookup } from './resolution-cache';

/** A JWT subject's standing in one tenant: its active role assignment's permissions and the tenant's plan. */
export interface ResolvedSubject {
  tenant_id: string;
  subject_id: string;
  assignment_id: string;
  roles: string[];
  permissions: string[];
  plan: 'beta' | 'enterprise';
}

export interface SubjectResolver {
  /** The subject's active assignment in the tenant, or null when it has none (or the tenant does not exist). */
  resolve(tenantId: string, subjectId: string): Promise<ResolvedSubject | null>;
  /** Drops a cached resolution (a role change seen on the bus). */
  evict(tenantId: string, subjectId: string): void;
}

/** Asks identity's internal API for a subject's assignment, cached like API keys (see ResolutionCache). */
export class CachedSubjectResolver extends CachedIdentityLookup<ResolvedSubject> implements SubjectResolver {
  resolve(tenantId: string, subjectId: string): Promise<ResolvedSubject | null> {
    return this.lookup(
      cacheKey(tenantId, subjectId),
      '/internal/v1/subjects/resolve',
      { tenant_id: tenantId, subject_id: subjectId },
      'subject-resolve',
    );
  }

  evict(tenantId: string, subjectId: string): void {
    const key = cacheKey(tenantId, subjectId);
    this.cache.evictWhere((k) => k === key);
  }
}

const cacheKey = (tenantId: string, subjectId: string) => `${tenantId}\n${subjectId}`;
