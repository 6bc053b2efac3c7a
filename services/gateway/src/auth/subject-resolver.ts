import type { InternalTokens, ServiceClient } from '@mandate/shared';
import { INTERNAL_TOKEN_HEADER, UpstreamUnavailable, serviceUnavailable } from '@mandate/shared';

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

/**
 * Asks identity's internal API, caching answers (hits and misses) briefly like the key resolver:
 * the TTL bounds how long a revoked role keeps working on a replica that missed the event.
 */
export class CachedSubjectResolver implements SubjectResolver {
  private readonly cache = new Map<string, { value: ResolvedSubject | null; expiresAt: number }>();
  private readonly maxEntries = 10_000;
  private evictions = 0;

  constructor(
    private readonly identity: ServiceClient,
    private readonly tokens: InternalTokens,
    private readonly ttlMs = 500,
    private readonly now: () => number = Date.now,
  ) {}

  async resolve(tenantId: string, subjectId: string): Promise<ResolvedSubject | null> {
    const cacheKey = `${tenantId}\n${subjectId}`;
    const hit = this.cache.get(cacheKey);
    if (hit && hit.expiresAt > this.now()) return hit.value;

    const epoch = this.evictions;
    const token = await this.tokens.mint({
      tenantId: null,
      actor: { type: 'system' },
      permissions: [],
      requestId: 'subject-resolve',
    });
    let res: { status: number; body: ResolvedSubject };
    try {
      res = await this.identity.json<ResolvedSubject>({
        method: 'POST',
        path: '/internal/v1/subjects/resolve',
        headers: { [INTERNAL_TOKEN_HEADER]: token },
        json: { tenant_id: tenantId, subject_id: subjectId },
        idempotent: true,
      });
    } catch (err) {
      if (err instanceof UpstreamUnavailable) throw serviceUnavailable('Identity service unavailable');
      throw err;
    }
    if (res.status !== 200 && res.status !== 404) throw serviceUnavailable('Identity service unavailable');
    const value = res.status === 200 ? res.body : null;
    if (epoch === this.evictions) {
      if (this.cache.size >= this.maxEntries) this.cache.clear();
      this.cache.set(cacheKey, { value, expiresAt: this.now() + this.ttlMs });
    }
    return value;
  }

  evict(tenantId: string, subjectId: string): void {
    this.evictions++;
    this.cache.delete(`${tenantId}\n${subjectId}`);
  }
}
