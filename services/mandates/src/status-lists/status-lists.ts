import { notFound, serviceUnavailable, type Clock } from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import { buildEvent, type EventRelay } from '@mandate/shared/events';
import type { Signer } from '../signing/signer';
import type { MandateStore } from '../store/mandate-store';
import { SigningUnavailable } from '../domain/errors';
import {
  LIST_ID_PATTERN,
  STATUS_LIST_BITS,
  STATUS_LIST_JWT_TYP,
  compressStatuses,
  digestOf,
  encodeStatuses,
  etagOf,
  type PublishedStatusList,
} from './status-list';

export interface StatusListDeps {
  store: MandateStore;
  signer: Signer;
  clock: Clock;
  relay?: EventRelay;
  logger?: Logger;
  /** `{PUBLIC_BASE_URL}`: a list's uri (and its `sub`) is `${publicBaseUrl}/v1/status-lists/${list_id}`. */
  publicBaseUrl: string;
  /** Cache lifetime announced to readers (Cache-Control max-age and the `ttl` claim), seconds. */
  ttlSeconds: number;
}

export const statusListUri = (publicBaseUrl: string, listId: string) =>
  `${publicBaseUrl.replace(/\/+$/, '')}/v1/status-lists/${listId}`;

/**
 * A rendering is reused for this long by one replica, so a burst of fetches costs one read of the
 * list's mandates. Far below the smallest ttl (10 s): freshness stays within ttl.
 */
const REUSE_MS = 1_000;
const MAX_PUBLISH_ATTEMPTS = 5;

/**
 * Serves each list signed. Its bits are derived from the mandates' stored states at the moment it is
 * rendered (the mandate documents are the only truth, so no state change can be lost on its way to a
 * list); a new token is signed, and STATUS_LIST_PUBLISHED recorded, only when the bits changed (or the
 * published token has less than `ttl` left). The token is stored with the list, so every replica serves
 * the same bytes and the same ETag for the same content.
 */
export class StatusLists {
  private readonly rendered = new Map<string, { at: number; list: PublishedStatusList }>();
  private readonly inFlight = new Map<string, Promise<PublishedStatusList>>();

  constructor(private readonly deps: StatusListDeps) {}

  get ttlSeconds(): number {
    return this.deps.ttlSeconds;
  }

  /** Seconds a cache may keep `list` (Cache-Control max-age): at most ttl, never past its exp. */
  maxAgeOf(list: PublishedStatusList): number {
    const left = list.exp - Math.floor(this.deps.clock.now().getTime() / 1000);
    return Math.max(0, Math.min(this.deps.ttlSeconds, left));
  }

  uriOf(listId: string): string {
    return statusListUri(this.deps.publicBaseUrl, listId);
  }

  /** The current signed list; NOT_FOUND for a list that was never opened. */
  async current(listId: string): Promise<PublishedStatusList> {
    if (!LIST_ID_PATTERN.test(listId)) throw notFound('Status list not found');
    const cached = this.rendered.get(listId);
    if (cached && this.deps.clock.now().getTime() - cached.at < REUSE_MS) return cached.list;
    let pending = this.inFlight.get(listId);
    if (!pending) {
      pending = this.render(listId).finally(() => this.inFlight.delete(listId));
      this.inFlight.set(listId, pending);
    }
    return pending;
  }

  private async render(listId: string): Promise<PublishedStatusList> {
    const { store, clock } = this.deps;
    for (let attempt = 0; attempt < MAX_PUBLISH_ATTEMPTS; attempt++) {
      const startedAt = clock.now();
      const record = await store.getStatusList(listId);
      if (!record) throw notFound('Status list not found');
      const bytes = encodeStatuses(await store.statusEntries(listId), record.capacity, startedAt);
      const digest = digestOf(bytes);
      const nowSeconds = Math.floor(startedAt.getTime() / 1000);
      const published = record.published;
      // Unchanged, and valid for at least half a ttl more: serve what is published (a cache keeps it
      // no longer than it has left, see maxAgeOf).
      if (
        published &&
        published.digest === digest &&
        2 * (published.exp - nowSeconds) >= this.deps.ttlSeconds
      ) {
        this.rendered.set(listId, { at: startedAt.getTime(), list: published });
        return published;
      }
      const next = await this.sign(listId, bytes, digest, nowSeconds);
      const changed = published?.digest !== digest;
      const events = changed
        ? [
            buildEvent({
              type: 'STATUS_LIST_PUBLISHED',
              tenantId: null,
              resource: { type: 'status_list', id: listId },
              data: { list_id: listId, uri: this.uriOf(listId), digest, iat: next.iat, exp: next.exp },
              occurredAt: startedAt,
            }),
          ]
        : [];
      // Conditional on the token read: of two replicas publishing at once, one wins, the other re-reads.
      if (await store.publishStatusList(listId, published?.etag ?? null, next, events)) {
        await this.deps.relay?.publishNow(events);
        this.rendered.set(listId, { at: startedAt.getTime(), list: next });
        return next;
      }
    }
    throw serviceUnavailable('Status list is being published by another replica; retry');
  }

  private async sign(
    listId: string,
    bytes: Buffer,
    digest: string,
    iat: number,
  ): Promise<PublishedStatusList> {
    const ttl = this.deps.ttlSeconds;
    // Valid for one ttl (docs/VERIFY-AT-THE-EDGE.md#online-or-offline): an offline decision is stale by
    // at most ttl, and an old list cannot be replayed for longer than that.
    const exp = iat + ttl;
    const payload = {
      sub: this.uriOf(listId),
      iat,
      exp,
      ttl,
      status_list: { bits: STATUS_LIST_BITS, lst: compressStatuses(bytes) },
    };
    let token: string;
    try {
      token = await this.deps.signer.sign(JSON.stringify(payload), { typ: STATUS_LIST_JWT_TYP });
    } catch (err) {
      throw new SigningUnavailable(err);
    }
    return { token, etag: etagOf(token), digest, iat, exp };
  }
}
