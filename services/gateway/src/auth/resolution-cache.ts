import {
  ContractClient,
  createLogger,
  type CallContext,
  type InternalTokens,
  type Logger,
  type ServiceClient,
} from '@mandate/shared';

/** One cached answer, with what loads it again: alone (`load`), or among others (`item`, for `loadMany`). */
interface Entry<V, I> {
  value: V | null;
  expiresAt: number;
  usedAt: number;
  load: () => Promise<V | null>;
  item?: I;
}

/** At most this many entries in one `loadMany` call (identity's RESOLVE_MANY_MAX). */
const REFRESH_BATCH = 100;

/**
 * A short-TTL cache of identity's answers (hits and misses) for the gateway's credential checks.
 * The TTL bounds how long a revoked credential can pass on a replica that missed the revocation
 * event; events evict sooner. Concurrent misses of one key share one call, and a hot entry is
 * refreshed in the background during the second half of its TTL, so requests rarely wait.
 *
 * With `loadMany`, `keepWarm` refreshes every due entry in one call per hundred instead of one
 * call each: a gateway holding 40 keys in use asked identity 80 times a second (a TTL of 500 ms),
 * bursts of 40 calls every 125 ms that both processes paid for on the request path's CPU.
 */
export class ResolutionCache<V, I = never> {
  private readonly entries = new Map<string, Entry<V, I>>();
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
    /** Loads many entries at once, one answer per item in order; used by `keepWarm` for entries with an item. */
    private readonly loadMany?: (items: I[]) => Promise<(V | null)[]>,
  ) {}

  get(key: string, load: () => Promise<V | null>, item?: I): Promise<V | null> {
    const hit = this.entries.get(key);
    const now = this.now();
    if (this.keepWarmEveryMs !== undefined && !this.warmer) {
      this.warmer = setInterval(() => this.keepWarm(), this.keepWarmEveryMs);
      this.warmer.unref();
    }
    if (hit && hit.expiresAt > now) {
      hit.usedAt = now;
      // The entry served is still within its TTL, so the bound on a revoked credential is unchanged.
      // keepWarm, when it runs, refreshes a used entry before it expires: no call per request here.
      if (
        this.keepWarmEveryMs === undefined &&
        hit.expiresAt - now < this.ttlMs / 2 &&
        !this.inflight.has(key)
      )
        this.fetch(key, load, item, now).catch(() => undefined);
      return Promise.resolve(hit.value);
    }
    return this.inflight.get(key) ?? this.fetch(key, load, item);
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
    const due: [string, Entry<V, I>][] = [];
    for (const [key, entry] of this.entries) {
      if (now - entry.usedAt > 2 * this.ttlMs) {
        if (entry.expiresAt <= now && !this.inflight.has(key)) this.entries.delete(key);
        continue;
      }
      // Unknown credentials are not worth asking identity about again unprompted.
      if (entry.value === null || entry.expiresAt - now >= this.ttlMs / 2 || this.inflight.has(key)) continue;
      if (this.loadMany && entry.item !== undefined) due.push([key, entry]);
      else this.fetch(key, entry.load, entry.item, entry.usedAt).catch(() => undefined);
    }
    for (let i = 0; i < due.length; i += REFRESH_BATCH)
      this.refreshMany(due.slice(i, i + REFRESH_BATCH)).catch(() => undefined);
  }

  private fetch(
    key: string,
    load: () => Promise<V | null>,
    item: I | undefined,
    usedAt = this.now(),
  ): Promise<V | null> {
    const epoch = this.evictions;
    const call = load()
      .then((value) => {
        if (epoch === this.evictions) this.store(key, { value, usedAt, load, item });
        return value;
      })
      .finally(() => {
        if (this.inflight.get(key) === call) this.inflight.delete(key);
      });
    this.inflight.set(key, call);
    return call;
  }

  /** One `loadMany` call for these entries; requests that miss one of them meanwhile join it. */
  private refreshMany(due: [string, Entry<V, I>][]): Promise<void> {
    const epoch = this.evictions;
    const answers = this.loadMany!(due.map(([, entry]) => entry.item!)).then((values) => {
      if (values.length !== due.length)
        throw new Error(`loadMany answered ${values.length} of ${due.length}`);
      return values;
    });
    const calls = due.map(([key], i) => {
      const call = answers
        .then((values) => values[i]!)
        .finally(() => {
          if (this.inflight.get(key) === call) this.inflight.delete(key);
        });
      this.inflight.set(key, call);
      return call;
    });
    // A failed refresh leaves the entries as they were: served until their TTL, then loaded alone.
    calls.forEach((call) => call.catch(() => undefined));
    return answers.then((values) => {
      if (epoch !== this.evictions) return;
      due.forEach(([key, entry], i) =>
        this.store(key, { value: values[i]!, usedAt: entry.usedAt, load: entry.load, item: entry.item }),
      );
    });
  }

  private store(key: string, entry: Omit<Entry<V, I>, 'expiresAt'>): void {
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    // usedAt only moves forward: a refresh must not make a key look idle that a request just used.
    const usedAt = Math.max(entry.usedAt, this.entries.get(key)?.usedAt ?? 0);
    this.entries.set(key, { ...entry, usedAt, expiresAt: this.now() + this.ttlMs });
  }

  /** Drops every entry matching; calls under way may carry the revoked answer, so later requests do not join them. */
  evictWhere(matches: (key: string, value: V | null) => boolean): void {
    this.evictions++;
    this.inflight.clear();
    for (const [key, entry] of this.entries) if (matches(key, entry.value)) this.entries.delete(key);
  }
}

/**
 * A resolver over identity's resolve routes (called through ContractClient, so the answer is the
 * route's schema or a logged 503), its answers cached by a ResolutionCache and refreshed many at a
 * time. 200 → the answer; a 4xx → null (404: unknown; 400: an input identity refuses to look up, so
 * nothing can match it — a credential that cannot be valid is the caller's 401, never the gateway's 503).
 */
export abstract class CachedIdentityLookup<V, I> {
  protected readonly cache: ResolutionCache<V, I>;
  protected readonly identity: ContractClient;

  constructor(
    identity: ServiceClient,
    private readonly tokens: InternalTokens,
    ttlMs = 500,
    logger: Logger = createLogger('gateway', 'silent'),
  ) {
    this.identity = new ContractClient(identity, { name: 'identity', logger });
    // Kept warm a quarter TTL at a time: a key in use is refreshed before it expires.
    this.cache = new ResolutionCache<V, I>(
      ttlMs,
      Date.now,
      undefined,
      Math.max(10, ttlMs / 4),
      async (items) => this.resolveMany(items, await this.context('credential-refresh')),
    );
  }

  /** Identity's answer for one credential, or null. */
  protected abstract resolveOne(item: I, ctx: CallContext): Promise<V | null>;
  /** Identity's answers for many, one per item in order; throws when the call is refused. */
  protected abstract resolveMany(items: I[], ctx: CallContext): Promise<(V | null)[]>;

  /** The cached answer under `cacheKey`, else identity's answer for `item`. */
  protected lookup(cacheKey: string, item: I, requestId: string): Promise<V | null> {
    return this.cache.get(cacheKey, async () => this.resolveOne(item, await this.context(requestId)), item);
  }

  private async context(requestId: string): Promise<CallContext> {
    const token = await this.tokens.mint(
      { tenantId: null, actor: { type: 'system' }, permissions: [], requestId },
      'identity',
    );
    return { token, requestId };
  }
}

/** The results of a resolve-many answer, which never refuses a well-formed call. */
export function resultsOf<T>(
  answer: { ok: true; body: { results: T[] } } | { ok: false; status: number },
): T[] {
  if (!answer.ok) throw new Error(`identity refused a credential refresh (${answer.status})`);
  return answer.body.results;
}
