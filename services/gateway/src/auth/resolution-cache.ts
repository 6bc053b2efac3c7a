import type { internalRoutes } from '@mandate/identity';
import {
  ContractClient,
  createLogger,
  type ContractCallInput,
  type InternalTokens,
  type Logger,
  type ServiceClient,
} from '@mandate/shared';

/**
 * A short-TTL cache of identity's answers (hits and misses) for the gateway's credential checks.
 * The TTL bounds how long a revoked credential can pass on a replica that missed the revocation
 * event; events evict sooner. Concurrent misses of one key share one call, and a hot entry is
 * refreshed in the background during the second half of its TTL, so requests rarely wait.
 */
export class ResolutionCache<V> {
  private readonly entries = new Map<
    string,
    { value: V | null; expiresAt: number; usedAt: number; load: () => Promise<V | null> }
  >();
  private readonly inflight = new Map<string, Promise<V | null>>();
  /** Bumped by every eviction: an answer fetched before one may predate the revocation and is not cached. */
  private evictions = 0;

  private warmer?: NodeJS.Timeout;

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
    private readonly maxEntries = 10_000,
    /** Run `keepWarm` this often (the gateway: a quarter of the TTL); absent = only on requests. */
    private readonly keepWarmEveryMs?: number,
  ) {}

  get(key: string, load: () => Promise<V | null>): Promise<V | null> {
    const hit = this.entries.get(key);
    const now = this.now();
    if (this.keepWarmEveryMs !== undefined && !this.warmer) {
      this.warmer = setInterval(() => this.keepWarm(), this.keepWarmEveryMs);
      this.warmer.unref();
    }
    if (hit && hit.expiresAt > now) {
      hit.usedAt = now;
      // The entry served is still within its TTL, so the bound on a revoked credential is unchanged.
      if (hit.expiresAt - now < this.ttlMs / 2 && !this.inflight.has(key))
        this.fetch(key, load, now).catch(() => undefined);
      return Promise.resolve(hit.value);
    }
    return this.inflight.get(key) ?? this.fetch(key, load);
  }

  /**
   * Refreshes, in the background, every known credential a request used within the last two TTLs
   * once it is in the second half of its TTL — so a key in use at any steady rate, even one
   * request a second, is never found expired and no request waits for identity — and forgets
   * those no request used for that long. The TTL bound is unchanged: an entry is never served
   * past its TTL, whatever a refresh does.
   */
  keepWarm(): void {
    const now = this.now();
    for (const [key, entry] of this.entries) {
      if (now - entry.usedAt > 2 * this.ttlMs) {
        if (entry.expiresAt <= now && !this.inflight.has(key)) this.entries.delete(key);
        continue;
      }
      // Unknown credentials are not worth asking identity about again unprompted.
      if (entry.value === null || entry.expiresAt - now >= this.ttlMs / 2 || this.inflight.has(key)) continue;
      this.fetch(key, entry.load, entry.usedAt).catch(() => undefined);
    }
  }

  private fetch(key: string, load: () => Promise<V | null>, usedAt = this.now()): Promise<V | null> {
    const epoch = this.evictions;
    const call = load()
      .then((value) => {
        if (epoch === this.evictions) {
          if (this.entries.size >= this.maxEntries) this.entries.clear();
          this.entries.set(key, { value, expiresAt: this.now() + this.ttlMs, usedAt, load });
        }
        return value;
      })
      .finally(() => {
        if (this.inflight.get(key) === call) this.inflight.delete(key);
      });
    this.inflight.set(key, call);
    return call;
  }

  /** Drops every entry matching; calls under way may carry the revoked answer, so later requests do not join them. */
  evictWhere(matches: (key: string, value: V | null) => boolean): void {
    this.evictions++;
    this.inflight.clear();
    for (const [key, entry] of this.entries) if (matches(key, entry.value)) this.entries.delete(key);
  }
}

/** The identity route a lookup asks: one of its internal resolve routes. */
type ResolveRoute = (typeof internalRoutes)['resolveApiKey' | 'resolveSubject'];

/**
 * A resolver over one identity resolve route (called through ContractClient, so the answer is the
 * route's schema or a logged 503), its answers cached by a ResolutionCache. 200 → the answer; a
 * 4xx → null (404: unknown; 400: an input identity refuses to look up, so nothing can match it — a
 * credential that cannot be valid is the caller's 401, never the gateway's 503).
 */
export abstract class CachedIdentityLookup<V> {
  protected readonly cache: ResolutionCache<V>;
  private readonly identity: ContractClient;

  constructor(
    identity: ServiceClient,
    private readonly tokens: InternalTokens,
    ttlMs = 500,
    logger: Logger = createLogger('gateway', 'silent'),
  ) {
    this.identity = new ContractClient(identity, { name: 'identity', logger });
    // Kept warm a quarter TTL at a time: a key in use is refreshed before it expires.
    this.cache = new ResolutionCache(ttlMs, Date.now, undefined, Math.max(10, ttlMs / 4));
  }

  /** The cached answer under `cacheKey`, else identity's answer to `route`. */
  protected lookup<R extends ResolveRoute>(
    cacheKey: string,
    route: R,
    body: ContractCallInput<R>['body'],
    requestId: string,
  ): Promise<V | null> {
    return this.cache.get(cacheKey, async () => {
      const token = await this.tokens.mint(
        { tenantId: null, actor: { type: 'system' }, permissions: [], requestId },
        'identity',
      );
      const answer = await this.identity.call(route, { body }, { token, requestId });
      return answer.ok ? (answer.body as V) : null;
    });
  }
}
