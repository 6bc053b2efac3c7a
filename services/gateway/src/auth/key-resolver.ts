import { createHash } from 'node:crypto';
import { internalRoutes, type ResolvedKey } from '@mandate/identity';
import type { CallContext } from '@mandate/shared';
import { CachedIdentityLookup, resultsOf } from './resolution-cache';

/** What identity looks a key up by: the secret itself (sent in a POST body, never cached). */
type KeyItem = { api_key: string };

export type { ResolvedKey };

export interface KeyResolver {
  /** The key behind a secret, or null when it is unknown or revoked. */
  resolve(apiKey: string): Promise<ResolvedKey | null>;
  /** Drops any cached resolution of this key id (a revocation seen on the bus). */
  evict(keyId: string): void;
}

/** Resolves secrets through identity's internal API, cached by the secret's hash (never the secret). */
export class CachedKeyResolver extends CachedIdentityLookup<ResolvedKey, KeyItem> implements KeyResolver {
  resolve(apiKey: string): Promise<ResolvedKey | null> {
    const cacheKey = createHash('sha256').update(apiKey).digest('base64url');
    return this.lookup(cacheKey, { api_key: apiKey }, 'key-resolve');
  }

  protected async resolveOne(item: KeyItem, ctx: CallContext): Promise<ResolvedKey | null> {
    const answer = await this.identity.call(internalRoutes.resolveApiKey, { body: item }, ctx);
    return answer.ok ? answer.body : null;
  }

  protected async resolveMany(items: KeyItem[], ctx: CallContext): Promise<(ResolvedKey | null)[]> {
    return resultsOf(await this.identity.call(internalRoutes.resolveApiKeys, { body: { items } }, ctx));
  }

  evict(keyId: string): void {
    this.cache.evictWhere((_, value) => value?.key_id === keyId);
  }
}
