import { createHash } from 'node:crypto';
import { KEYS_USED_MAX, internalRoutes, type CredentialChange, type ResolvedKey } from '@mandate/identity';
import type { InternalTokens } from '@mandate/shared/core';
import type { Logger } from '@mandate/shared/observability';
import type { CallContext, ServiceClient } from '@mandate/shared/http';
import type { CredentialCache } from './credential-epoch';
import { CachedIdentityLookup } from './resolution-cache';

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
export class CachedKeyResolver
  extends CachedIdentityLookup<ResolvedKey, KeyItem>
  implements KeyResolver, CredentialCache
{
  constructor(identity: ServiceClient, tokens: InternalTokens, ttlMs?: number, logger?: Logger) {
    // A staging key is asked about again once its activation window closes (docs/DECISIONS.md#keys).
    super(identity, tokens, ttlMs, logger, (key) =>
      key.usable_until === undefined ? undefined : Date.parse(key.usable_until),
    );
  }

  resolve(apiKey: string): Promise<ResolvedKey | null> {
    const cacheKey = createHash('sha256').update(apiKey).digest('base64url');
    return this.lookup(cacheKey, { api_key: apiKey }, 'key-resolve');
  }

  protected async resolveOne(item: KeyItem, ctx: CallContext): Promise<ResolvedKey | null> {
    const answer = await this.identity.call(internalRoutes.resolveApiKey, { body: item }, ctx);
    return answer.ok ? answer.body : null;
  }

  /**
   * Reports the keys requests used since the last report (their last_used_at; a cached key is not
   * resolved again, and resolving is what recorded its use before). Best effort: a failed report is
   * not repeated, the next one covers the keys used again.
   */
  async reportUse(): Promise<void> {
    const since = this.lastReport;
    this.lastReport = Date.now();
    const items = this.cache.usedSince(since).map((k) => ({ tenant_id: k.tenant_id, key_id: k.key_id }));
    for (let i = 0; i < items.length; i += KEYS_USED_MAX) {
      const body = { items: items.slice(i, i + KEYS_USED_MAX) };
      await this.identity.call(internalRoutes.recordKeysUsed, { body }, await this.context('key-use-report'));
    }
  }

  private lastReport = Date.now();

  evict(keyId: string): void {
    this.cache.evictWhere((_, value) => value?.key_id === keyId);
  }

  drop(changes: CredentialChange[] | null): void {
    if (changes === null) return this.cache.evictWhere(() => true);
    const keyIds = new Set(changes.filter((c) => c.kind === 'api_key').map((c) => c.id));
    const tenants = new Set(changes.filter((c) => c.kind === 'tenant').map((c) => c.tenant_id));
    if (keyIds.size === 0 && tenants.size === 0) return;
    this.cache.evictWhere(
      (_, value) => !!value && (keyIds.has(value.key_id) || tenants.has(value.tenant_id)),
    );
  }
}
