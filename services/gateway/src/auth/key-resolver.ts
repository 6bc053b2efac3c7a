import { createHash } from 'node:crypto';
import { internalRoutes, type ResolvedKey } from '@mandate/identity';
import { CachedIdentityLookup } from './resolution-cache';

export type { ResolvedKey };

export interface KeyResolver {
  /** The key behind a secret, or null when it is unknown or revoked. */
  resolve(apiKey: string): Promise<ResolvedKey | null>;
  /** Drops any cached resolution of this key id (a revocation seen on the bus). */
  evict(keyId: string): void;
}

/** Resolves secrets through identity's internal API, cached by the secret's hash (never the secret). */
export class CachedKeyResolver extends CachedIdentityLookup<ResolvedKey> implements KeyResolver {
  resolve(apiKey: string): Promise<ResolvedKey | null> {
    const cacheKey = createHash('sha256').update(apiKey).digest('base64url');
    return this.lookup(cacheKey, internalRoutes.resolveApiKey, { api_key: apiKey }, 'key-resolve');
  }

  evict(keyId: string): void {
    this.cache.evictWhere((_, value) => value?.key_id === keyId);
  }
}
