import { createHash } from 'node:crypto';
import type { InternalTokens, ServiceClient } from '@mandate/shared';
import { ResolutionCache, askIdentity } from './resolution-cache';

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

/** Resolves secrets through identity's internal API, cached by the secret's hash (never the secret). */
export class CachedKeyResolver implements KeyResolver {
  private readonly cache: ResolutionCache<ResolvedKey>;

  constructor(
    private readonly identity: ServiceClient,
    private readonly tokens: InternalTokens,
    ttlMs = 500,
    now: () => number = Date.now,
  ) {
    this.cache = new ResolutionCache(ttlMs, now);
  }

  resolve(apiKey: string): Promise<ResolvedKey | null> {
    const cacheKey = createHash('sha256').update(apiKey).digest('base64url');
    return this.cache.get(cacheKey, () =>
      askIdentity<ResolvedKey>(
        this.identity,
        this.tokens,
        '/internal/v1/keys/resolve',
        { api_key: apiKey },
        'key-resolve',
      ),
    );
  }

  evict(keyId: string): void {
    this.cache.evictWhere((_, value) => value?.key_id === keyId);
  }
}
