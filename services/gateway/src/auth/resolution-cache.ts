import { type InternalTokens } from '@mandate/shared/core';
import { createLogger, type Logger } from '@mandate/shared/observability';
import { ContractClient, type CallContext, type ServiceClient } from '@mandate/shared/http';

/** One cached answer, with what loads it again. */
interface Entry<V> {
  value: V | null;
  /** When the load that answered began: identity's word on it dates from then. */
  loadedAt: number;
  usedAt: number;
  /** Never served from this time on (a staging key's window end); Infinity otherwise. */
  notAfter: number;
  load: () => Promise<V | null>;
}

/**
 * A cache of identity's answers (hits and misses) for the gateway's credential checks
 * (docs/DECISIONS.md, "Credential changes").
 *
 * An answer is trusted for the TTL after identity last vouched for it: by answering it, or by a
 * credential epoch check that began later and dropped whatever changed since the previous one
 * (`vouch`). While the checks succeed, a credential in use is never asked about again, whatever
 * the number of keys: identity's cost follows the changes, not the keys. Misses are trusted for
 * the TTL after their load only (a key's creation is no change the epoch lists). When the checks
 * stop succeeding, entries run out after the TTL as before, and a request in the last quarter of
 * an entry's TTL refreshes it in the background. Concurrent misses of one key share one call.
 */
export class ResolutionCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private readonly inflight = new Map<string, Promise<V | null>>();
  /** Bumped by every eviction: an answer fetched before one may predate the change and is not cached. */
  private evictions = 0;
  /** The start of the last epoch check that succeeded: what was cached then is still identity's word. */
  private vouchedAt = -Infinity;

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
    private readonly maxEntries = 100_000,
    /** The time from which an answer must not be used any more, if it has one (ms since the epoch). */
    private readonly notAfterOf: (value: V) => number | undefined = () => undefined,
  ) {}

  get(key: string, load: () => Promise<V | null>): Promise<V | null> {
    const hit = this.entries.get(key);
    const now = this.now();
    if (hit && now < hit.notAfter) {
      const left = this.trustedUntil(hit) - now;
      if (left > 0) {
        hit.usedAt = now;
        // Only when no check has vouched for it lately (identity unreachable, or no checks at all).
        if (left < this.ttlMs / 4 && !this.inflight.has(key))
          this.fetch(key, load, now).catch(() => undefined);
        return Promise.resolve(hit.value);
      }
    }
    return this.inflight.get(key) ?? this.fetch(key, load);
  }

  /** How many answers are cached (the benchmark's check that every key in use is held). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * An epoch check that began at `at` succeeded, and what it listed as changed was evicted: every
   * other answer cached is identity's word as of `at`.
   */
  vouch(at: number): void {
    this.vouchedAt = Math.max(this.vouchedAt, at);
  }

  /** Forgets the answers no request used for `idleMs` (memory only: a request loads them again). */
  forgetUnused(idleMs: number): void {
    const now = this.now();
    for (const [key, entry] of this.entries)
      if (now - entry.usedAt > idleMs && !this.inflight.has(key)) this.entries.delete(key);
  }

  /** The answers (not misses) a request used at or after `since`. */
  usedSince(since: number): V[] {
    const used: V[] = [];
    for (const entry of this.entries.values())
      if (entry.value !== null && entry.usedAt >= since) used.push(entry.value);
    return used;
  }

  private trustedUntil(entry: Entry<V>): number {
    const since = entry.value === null ? entry.loadedAt : Math.max(entry.loadedAt, this.vouchedAt);
    return since + this.ttlMs;
  }

  private fetch(key: string, load: () => Promise<V | null>, usedAt = this.now()): Promise<V | null> {
    const epoch = this.evictions;
    const loadedAt = this.now();
    const call = load()
      .then((value) => {
        if (epoch === this.evictions) this.store(key, { value, loadedAt, usedAt, load });
        return value;
      })
      .finally(() => {
        if (this.inflight.get(key) === call) this.inflight.delete(key);
      });
    this.inflight.set(key, call);
    return call;
  }

  private store(key: string, entry: Omit<Entry<V>, 'notAfter'>): void {
    const previous = this.entries.get(key);
    // The oldest first (insertion order): one entry out for one in, never the whole cache at once.
    if (!previous && this.entries.size >= this.maxEntries)
      this.entries.delete(this.entries.keys().next().value!);
    // usedAt only moves forward: a refresh must not make a key look idle that a request just used.
    const usedAt = Math.max(entry.usedAt, previous?.usedAt ?? 0);
    const notAfter = (entry.value !== null && this.notAfterOf(entry.value)) || Infinity;
    this.entries.set(key, { ...entry, usedAt, notAfter });
  }

  /** Drops every entry matching; calls under way may carry the changed answer, so later requests do not join them. */
  evictWhere(matches: (key: string, value: V | null) => boolean): void {
    this.evictions++;
    this.inflight.clear();
    for (const [key, entry] of this.entries) if (matches(key, entry.value)) this.entries.delete(key);
  }
}

/**
 * A resolver over identity's resolve routes (called through ContractClient, so the answer is the
 * route's schema or a logged 503), its answers cached by a ResolutionCache that the credential
 * epoch check (credential-epoch.ts) keeps vouched for. 200 → the answer; a 4xx → null (404:
 * unknown; 400: an input identity refuses to look up, so nothing can match it — a credential that
 * cannot be valid is the caller's 401, never the gateway's 503).
 */
export abstract class CachedIdentityLookup<V, I> {
  protected readonly cache: ResolutionCache<V>;
  protected readonly identity: ContractClient;

  constructor(
    identity: ServiceClient,
    private readonly tokens: InternalTokens,
    ttlMs = 500,
    logger: Logger = createLogger('gateway', 'silent'),
    notAfterOf?: (value: V) => number | undefined,
  ) {
    this.identity = new ContractClient(identity, { name: 'identity', logger });
    this.cache = new ResolutionCache<V>(ttlMs, Date.now, undefined, notAfterOf);
  }

  /** Identity's answer for one credential, or null. */
  protected abstract resolveOne(item: I, ctx: CallContext): Promise<V | null>;

  /** The cached answer under `cacheKey`, else identity's answer for `item`. */
  protected lookup(cacheKey: string, item: I, requestId: string): Promise<V | null> {
    return this.cache.get(cacheKey, async () => this.resolveOne(item, await this.context(requestId)));
  }

  /** See ResolutionCache.vouch. */
  vouch(at: number): void {
    this.cache.vouch(at);
  }

  /** See ResolutionCache.forgetUnused. */
  forgetUnused(idleMs: number): void {
    this.cache.forgetUnused(idleMs);
  }

  /** How many answers are cached. */
  get cached(): number {
    return this.cache.size;
  }

  protected async context(requestId: string): Promise<CallContext> {
    const token = await this.tokens.mint(
      { tenantId: null, actor: { type: 'system' }, permissions: [], requestId },
      'identity',
    );
    return { token, requestId };
  }
}
