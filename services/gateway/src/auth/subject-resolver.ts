import { internalRoutes, type CredentialChange, type ResolvedSubject } from '@mandate/identity';
import type { CallContext } from '@mandate/shared/http';
import type { CredentialCache } from './credential-epoch';
import { CachedIdentityLookup } from './resolution-cache';

type SubjectItem = { tenant_id: string; subject_id: string };

/** A JWT subject's standing in one tenant: its active role assignment's permissions and the tenant's plan. */
export type { ResolvedSubject };

export interface SubjectResolver {
  /** The subject's active assignment in the tenant, or null when it has none (or the tenant does not exist). */
  resolve(tenantId: string, subjectId: string): Promise<ResolvedSubject | null>;
  /** Drops a cached resolution (a role change seen on the bus). */
  evict(tenantId: string, subjectId: string): void;
}

/** Asks identity's internal API for a subject's assignment, cached like API keys (see ResolutionCache). */
export class CachedSubjectResolver
  extends CachedIdentityLookup<ResolvedSubject, SubjectItem>
  implements SubjectResolver, CredentialCache
{
  resolve(tenantId: string, subjectId: string): Promise<ResolvedSubject | null> {
    return this.lookup(
      cacheKey(tenantId, subjectId),
      { tenant_id: tenantId, subject_id: subjectId },
      'subject-resolve',
    );
  }

  protected async resolveOne(item: SubjectItem, ctx: CallContext): Promise<ResolvedSubject | null> {
    const answer = await this.identity.call(internalRoutes.resolveSubject, { body: item }, ctx);
    return answer.ok ? answer.body : null;
  }

  evict(tenantId: string, subjectId: string): void {
    const key = cacheKey(tenantId, subjectId);
    this.cache.evictWhere((k) => k === key);
  }

  drop(changes: CredentialChange[] | null): void {
    if (changes === null) return this.cache.evictWhere(() => true);
    const keys = new Set(
      changes.filter((c) => c.kind === 'subject').map((c) => cacheKey(c.tenant_id, c.id ?? '')),
    );
    const tenants = new Set(changes.filter((c) => c.kind === 'tenant').map((c) => c.tenant_id));
    if (keys.size === 0 && tenants.size === 0) return;
    this.cache.evictWhere((k) => keys.has(k) || tenants.has(k.slice(0, k.indexOf('\n'))));
  }
}

const cacheKey = (tenantId: string, subjectId: string) => `${tenantId}\n${subjectId}`;
