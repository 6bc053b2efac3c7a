import { createHash } from 'node:crypto';
import type { InternalTokens, ServiceClient } from '@mandate/shared';
import { INTERNAL_TOKEN_HEADER, UpstreamUnavailable, serviceUnavailable } from '@mandate/shared';

export interface ResolvedKey {
  key_id: string;
  tenant_id: string;
  scopes: string[];
  status: 'active' | 'staging';
  plan: 'beta' | 'enterprise';
}

export interface KeyResolver {
  /** The key behind a secret, or null when it is unknown or revoked. */
  resolve(apiKey: string): Promise<ResolvedKey | null>;
  /** Drops any cached resolution of this key id (a revocation seen on the bus). */
  evict(keyId: string): void;
}

/**
 * Resolves secrets through identity's internal API. Results (hits and misses) are cached by the
 * secret's hash for a short TTL so a hot key costs no extra hop per request; the TTL bounds how
 * long a revoked key can still pass when no eviction event arrives.
 */
export class CachedKeyResolver implements KeyResolver {
  private readonly cache = new Map<string, { value: ResolvedKey | null; expiresAt: number }>();
  private readonly maxEntries = 10_000;
  /** Bumped by every eviction: an answer fetched before one may predate the revocation and is not cached. */
  private evictions = 0;

  constructor(
    private readonly identity: ServiceClient,
    private readonly tokens: InternalTokens,
    private readonly ttlMs = 500,
    private readonly now: () => number = Date.now,
  ) {}

  /** Identity calls under way, by cache key: concurrent misses of one key share one call. */
  private readonly inflight = new Map<string, Promise<ResolvedKey | null>>();

  async resolve(apiKey: string): Promise<ResolvedKey | null> {
    const cacheKey = createHash('sha256').update(apiKey).digest('base64url');
    const hit = this.cache.get(cacheKey);
    const now = this.now();
    if (hit && hit.expiresAt > now) {
      // In the second half of its TTL a hot key is refreshed in the background (one call per key),
      // so its requests never wait for identity; the entry served is still within its TTL, so the
      // bound on a revoked key is unchanged.
      if (hit.expiresAt - now < this.ttlMs / 2 && !this.inflight.has(cacheKey))
        this.fetch(apiKey, cacheKey).catch(() => undefined);
      return hit.value;
    }
    return this.inflight.get(cacheKey) ?? this.fetch(apiKey, cacheKey);
  }

  private fetch(apiKey: string, cacheKey: string): Promise<ResolvedKey | null> {
    const call = this.ask(apiKey, cacheKey).finally(() => {
      if (this.inflight.get(cacheKey) === call) this.inflight.delete(cacheKey);
    });
    this.inflight.set(cacheKey, call);
    return call;
  }

  private async ask(apiKey: string, cacheKey: string): Promise<ResolvedKey | null> {
    const epoch = this.evictions;
    const token = await this.tokens.mint({
      tenantId: null,
      actor: { type: 'system' },
      permissions: [],
      requestId: 'key-resolve',
    });
    let res: { status: number; body: ResolvedKey };
    try {
      res = await this.identity.json<ResolvedKey>({
        method: 'POST',
        path: '/internal/v1/keys/resolve',
        headers: { [INTERNAL_TOKEN_HEADER]: token },
        json: { api_key: apiKey },
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

  evict(keyId: string): void {
    this.evictions++;
    // A call started before the eviction may carry the revoked key: later requests must not join it.
    this.inflight.clear();
    for (const [k, v] of this.cache) if (v.value?.key_id === keyId) this.cache.delete(k);
  }
}
