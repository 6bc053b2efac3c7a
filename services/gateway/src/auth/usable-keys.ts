import { createHash } from 'node:crypto';
import {
  KEY_HASH_PREFIX_CHARS,
  USABLE_KEYS_PAGE_MAX,
  internalRoutes,
  type CredentialChange,
  type UsableKey,
} from '@mandate/identity';
import { type InternalTokens } from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import { ContractClient, type ServiceClient } from '@mandate/shared/http';
import type { CredentialCache } from './credential-epoch';

/** What the list is read from: identity's usable keys, by creation time or by id. */
export type UsableKeysSource = (
  query: { created_since?: string; limit?: number } | { keys: { tenant_id: string; key_id: string }[] },
) => Promise<{ as_of: string; keys: UsableKey[] }>;

/** Catch-ups for keys created since the last one start at most this often. */
export const CATCH_UP_INTERVAL_MS = 1_000;
/** The whole list is read again this often, so nothing stale (an expired staging key) stays for good. */
const RELOAD_EVERY_MS = 10 * 60_000;
const NAMED_MAX = 100;

const keyRef = (k: { tenant_id: string; key_id: string }) => `${k.tenant_id}\u0000${k.key_id}`;
export const hashPrefixOf = (secret: string) =>
  createHash('sha256').update(secret, 'utf8').digest('hex').slice(0, KEY_HASH_PREFIX_CHARS);

/**
 * Every usable API key, known by its secret hash's prefix (docs/DECISIONS.md, "Authentication"),
 * so that a valid key passes an address over its failed-authentication limit even when the gateway
 * has never seen it and the address has spent its lookups. A key created after the last read is
 * found by a catch-up: a request from a blocked address whose key is not listed waits for the next
 * one that starts after it arrived (at most one per CATCH_UP_INTERVAL_MS, whatever the number of
 * such requests), so a key created before the request is always found. The list only lets a
 * request go on to authentication, which still decides; a key revoked since is dropped from it
 * by the credential changes.
 */
export class UsableKeys implements CredentialCache {
  /** prefix → key; and key → prefix, to drop a key by its id. */
  private byPrefix = new Map<string, string>();
  private prefixOf = new Map<string, string>();
  private sinceNext: string | undefined;
  private reloadDue = true;
  private lastReload = -Infinity;
  private running?: { startedAt: number; done: Promise<void> };
  private lastStartedAt = -Infinity;
  private readonly pending = new Set<Promise<void>>();
  /** Keys changed while a reload was being read: its answer may predate their change. */
  private changedDuringRead: { tenant_id: string; key_id: string }[] = [];

  constructor(
    private readonly source: UsableKeysSource,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
    private readonly catchUpIntervalMs = CATCH_UP_INTERVAL_MS,
  ) {}

  /** How many keys the list holds. */
  get size(): number {
    return this.byPrefix.size;
  }

  /**
   * Whether the secret is a listed key; when it is not, after a catch-up that began now, so after
   * the request arrived and after any key it can carry was created.
   */
  async admits(secret: string): Promise<boolean> {
    const prefix = hashPrefixOf(secret);
    if (this.byPrefix.has(prefix)) return true;
    await this.caughtUpSince(this.now());
    return this.byPrefix.has(prefix);
  }

  /** Starts a read now (at start, so the list is ready before the first blocked address). */
  refresh(): Promise<void> {
    return this.caughtUpSince(this.now());
  }

  private async caughtUpSince(t: number): Promise<void> {
    for (;;) {
      // Strictly after: a read that began in the same millisecond may have begun before the request.
      if (this.running && this.running.startedAt > t) return this.running.done;
      if (!this.running && this.lastStartedAt > t) return;
      if (this.running) {
        await this.running.done;
        continue;
      }
      const wait = Math.max(this.lastStartedAt + this.catchUpIntervalMs, t + 1) - this.now();
      if (wait > 0) {
        await new Promise((r) => setTimeout(r, wait));
        continue;
      }
      this.start();
    }
  }

  private start(): void {
    const startedAt = this.now();
    this.lastStartedAt = startedAt;
    if (startedAt - this.lastReload >= RELOAD_EVERY_MS) this.reloadDue = true;
    const done = this.read()
      .catch((err) =>
        this.logger.warn({ err }, 'reading the usable keys failed; a blocked address gets lookups only'),
      )
      .finally(() => (this.running = undefined));
    this.running = { startedAt, done };
  }

  /** A catch-up from the last `as_of`, or the whole list (swapped in once read) when a reload is due. */
  private async read(): Promise<void> {
    const reload = this.reloadDue;
    const byPrefix = reload ? new Map<string, string>() : this.byPrefix;
    const prefixOf = reload ? new Map<string, string>() : this.prefixOf;
    let since = reload ? undefined : this.sinceNext;
    let asOf: string | undefined;
    this.changedDuringRead = [];
    for (;;) {
      const page = await this.source({
        ...(since !== undefined ? { created_since: since } : {}),
        limit: USABLE_KEYS_PAGE_MAX,
      });
      asOf ??= page.as_of;
      for (const key of page.keys) add(byPrefix, prefixOf, key);
      const last = page.keys[page.keys.length - 1];
      // A full page all of one instant would be asked for again and again: taken as it is.
      if (page.keys.length < USABLE_KEYS_PAGE_MAX || !last || last.created_at === since) break;
      since = last.created_at;
    }
    this.sinceNext = asOf;
    if (reload) {
      this.byPrefix = byPrefix;
      this.prefixOf = prefixOf;
      this.reloadDue = false;
      this.lastReload = this.lastStartedAt;
      if (this.changedDuringRead.length > 0)
        this.drop(
          this.changedDuringRead.map((k) => ({ kind: 'api_key', tenant_id: k.tenant_id, id: k.key_id })),
        );
    }
  }

  /** A key's status changed: it is dropped, and listed again if still usable; a tenant-wide change or a gap reloads all. */
  drop(changes: CredentialChange[] | null): void {
    if (changes === null || changes.some((c) => c.kind === 'tenant')) {
      this.reloadDue = true;
      return;
    }
    const keys = changes
      .filter((c) => c.kind === 'api_key' && c.id !== undefined)
      .map((c) => ({ tenant_id: c.tenant_id, key_id: c.id! }));
    if (keys.length === 0) return;
    if (this.running) this.changedDuringRead.push(...keys);
    for (const key of keys) {
      const prefix = this.prefixOf.get(keyRef(key));
      if (prefix !== undefined) this.byPrefix.delete(prefix);
      this.prefixOf.delete(keyRef(key));
    }
    const relisting = this.relist(keys).catch((err) =>
      this.logger.warn({ err }, 'listing changed keys again failed; the next reload lists them'),
    );
    this.pending.add(relisting);
    void relisting.finally(() => this.pending.delete(relisting));
  }

  private async relist(keys: { tenant_id: string; key_id: string }[]): Promise<void> {
    for (let i = 0; i < keys.length; i += NAMED_MAX) {
      const page = await this.source({ keys: keys.slice(i, i + NAMED_MAX) });
      for (const key of page.keys) add(this.byPrefix, this.prefixOf, key);
    }
  }

  /** The relists under way (tests wait for them). */
  async settled(): Promise<void> {
    await Promise.all([...this.pending]);
  }

  vouch(): void {}

  forgetUnused(): void {}
}

function add(byPrefix: Map<string, string>, prefixOf: Map<string, string>, key: UsableKey): void {
  byPrefix.set(key.hash_prefix, keyRef(key));
  prefixOf.set(keyRef(key), key.hash_prefix);
}

/** The list read from identity's internal route. */
export function identityUsableKeys(
  identity: ServiceClient,
  tokens: InternalTokens,
  logger: Logger,
): UsableKeysSource {
  const client = new ContractClient(identity, { name: 'identity', logger });
  return async (query) => {
    const requestId = 'usable-keys';
    const token = await tokens.mint(
      { tenantId: null, actor: { type: 'system' }, permissions: [], requestId },
      'identity',
    );
    const answer = await client.call(internalRoutes.usableKeys, { body: query }, { token, requestId });
    if (!answer.ok) throw new Error(`identity refused the usable keys (${answer.status})`);
    return answer.body;
  };
}
