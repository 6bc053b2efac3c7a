import { randomUUID } from 'node:crypto';
import { MemoryOutbox, type AuditEvent } from '@mandate/shared/events';
import type { WebhookDeliveryStatus } from '../contract';
import type { ClaimedDelivery, WebhookDelivery, WebhookEndpoint } from './webhook';
import {
  DEFAULT_DELIVERY_RETENTION_MS,
  MAX_STORED_ATTEMPTS,
  deliveryExpiry,
  type AttemptCounts,
  type AttemptOutcome,
  type DeliveryKey,
  type DeliveryLease,
  type DeliveryPageQuery,
  type EndpointChanges,
  type EndpointRead,
  type PageQuery,
  type WebhookStore,
} from './webhook-store';

interface Lease {
  token: string;
  until: number;
}

/**
 * Webhook endpoints and deliveries in memory (embedded mode, tests): each method checks and
 * changes in one synchronous step, which is what makes it a guarded write here.
 */
export class MemoryWebhookStore implements WebhookStore {
  readonly kind = 'memory' as const;
  private readonly endpoints = new Map<string, WebhookEndpoint>();
  private readonly deliveries = new Map<string, WebhookDelivery>();
  /** (endpoint, event) → delivery id: the unique key that makes a redelivered event add nothing. */
  private readonly byEndpointEvent = new Map<string, string>();
  private readonly leases = new Map<string, Lease>();
  /** The PENDING deliveries' ids, so claiming never walks the delivered ones. */
  private readonly pending = new Set<string>();
  private readonly outbox = new MemoryOutbox();
  /** Finished deliveries → when they may go, oldest finish first (a Map keeps insertion order). */
  private readonly expiries = new Map<string, number>();

  constructor(private readonly deliveryRetentionMs = DEFAULT_DELIVERY_RETENTION_MS) {}

  /** Removes the finished deliveries whose retention ended by `nowMs` (MongoDB's TTL index, here). */
  private expire(nowMs: number): void {
    for (const [id, expiresAt] of this.expiries) {
      if (expiresAt > nowMs) break;
      const d = this.deliveries.get(id);
      if (d) this.byEndpointEvent.delete(`${d.endpoint_id} ${d.event_id}`);
      this.deliveries.delete(id);
      this.expiries.delete(id);
    }
  }

  async ping(): Promise<void> {}

  async insertEndpoint(endpoint: WebhookEndpoint, events: AuditEvent[]): Promise<boolean> {
    for (const e of this.endpoints.values())
      if (e.tenant_id === endpoint.tenant_id && e.slot === endpoint.slot) return false;
    this.endpoints.set(endpoint.id, structuredClone(endpoint));
    this.outbox.add(endpoint.id, events);
    return true;
  }

  async usedSlots(tenantId: string): Promise<number[]> {
    return [...this.endpoints.values()].filter((e) => e.tenant_id === tenantId).map((e) => e.slot);
  }

  async getEndpoint(tenantId: string, id: string): Promise<WebhookEndpoint | null> {
    const e = this.endpoints.get(id);
    return e && e.tenant_id === tenantId ? structuredClone(e) : null;
  }

  async listEndpoints(tenantId: string, page: PageQuery): Promise<WebhookEndpoint[]> {
    return [...this.endpoints.values()]
      .filter((e) => e.tenant_id === tenantId && (page.afterId === undefined || e.id < page.afterId))
      .sort((a, b) => (a.id < b.id ? 1 : -1))
      .slice(0, page.limit + 1)
      .map((e) => structuredClone(e));
  }

  async enabledEndpoints(tenantId: string): Promise<WebhookEndpoint[]> {
    return [...this.endpoints.values()]
      .filter((e) => e.tenant_id === tenantId && e.status === 'ENABLED')
      .map((e) => structuredClone(e));
  }

  async subscribedTypes(): Promise<string[]> {
    return [...new Set([...this.endpoints.values()].flatMap((e) => e.event_types))].sort();
  }

  async endpointsByIds(ids: string[]): Promise<WebhookEndpoint[]> {
    return ids.flatMap((id) => {
      const e = this.endpoints.get(id);
      return e ? [structuredClone(e)] : [];
    });
  }

  /** The stored endpoint if it is still as `read`. */
  private unchanged(read: EndpointRead): WebhookEndpoint | undefined {
    const e = this.endpoints.get(read.id);
    return e && e.tenant_id === read.tenant_id && e.version === read.version ? e : undefined;
  }

  async updateEndpoint(
    read: EndpointRead,
    changes: EndpointChanges,
    updatedAt: string,
    events: AuditEvent[],
  ): Promise<WebhookEndpoint | null> {
    const e = this.unchanged(read);
    if (!e) return null;
    const next = { ...e, ...structuredClone(changes), version: e.version + 1, updated_at: updatedAt };
    this.endpoints.set(e.id, next);
    this.outbox.add(e.id, events);
    return structuredClone(next);
  }

  async deleteEndpoint(read: EndpointRead, events: AuditEvent[]): Promise<boolean> {
    const e = this.unchanged(read);
    if (!e) return false;
    this.endpoints.delete(e.id);
    this.outbox.add(e.id, events);
    return true;
  }

  async insertDeliveries(deliveries: WebhookDelivery[]): Promise<void> {
    for (const d of deliveries) this.expire(Date.parse(d.created_at));
    for (const d of deliveries) {
      const key = `${d.endpoint_id} ${d.event_id}`;
      if (this.byEndpointEvent.has(key)) continue;
      this.byEndpointEvent.set(key, d.id);
      this.deliveries.set(d.id, structuredClone(d));
      if (d.status === 'PENDING') this.pending.add(d.id);
    }
  }

  async getDelivery(tenantId: string, endpointId: string, id: string): Promise<WebhookDelivery | null> {
    const d = this.deliveries.get(id);
    return d && d.tenant_id === tenantId && d.endpoint_id === endpointId ? structuredClone(d) : null;
  }

  async listDeliveries(
    tenantId: string,
    endpointId: string,
    page: DeliveryPageQuery,
  ): Promise<WebhookDelivery[]> {
    const asc = page.order === 'asc';
    const past = (id: string) => page.afterId === undefined || (asc ? id > page.afterId : id < page.afterId);
    return this.deliveriesOf(tenantId, endpointId, page.status)
      .filter((d) => past(d.id))
      .sort((a, b) => (a.id < b.id ? 1 : -1) * (asc ? -1 : 1))
      .slice(0, page.limit + 1)
      .map((d) => structuredClone(d));
  }

  async countDeliveries(
    tenantId: string,
    endpointId: string,
    filter: { status?: WebhookDeliveryStatus },
  ): Promise<number> {
    return this.deliveriesOf(tenantId, endpointId, filter.status).length;
  }

  /** An endpoint's deliveries, of one status if given: what a list pages through and a count counts. */
  private deliveriesOf(tenantId: string, endpointId: string, status: WebhookDeliveryStatus | undefined) {
    return [...this.deliveries.values()].filter(
      (d) =>
        d.tenant_id === tenantId &&
        d.endpoint_id === endpointId &&
        (status === undefined || d.status === status),
    );
  }

  private lease(d: WebhookDelivery, until: Date): ClaimedDelivery {
    const token = randomUUID();
    this.leases.set(d.id, { token, until: until.getTime() });
    return { ...structuredClone(d), lease_token: token };
  }

  private leased(id: string, now: Date): boolean {
    const lease = this.leases.get(id);
    return lease !== undefined && lease.until > now.getTime();
  }

  async claimDue(now: Date, leaseUntil: Date, limit: number): Promise<ClaimedDelivery[]> {
    const claimed: ClaimedDelivery[] = [];
    for (const id of this.pending) {
      if (claimed.length >= limit) break;
      const d = this.deliveries.get(id)!;
      if (d.next_attempt_at === null) continue;
      if (Date.parse(d.next_attempt_at) > now.getTime() || this.leased(d.id, now)) continue;
      claimed.push(this.lease(d, leaseUntil));
    }
    return claimed;
  }

  async claimOne(key: DeliveryKey, now: Date, leaseUntil: Date): Promise<ClaimedDelivery | null> {
    const d = await this.getDelivery(key.tenant_id, key.endpoint_id, key.id);
    if (!d || this.leased(d.id, now)) return null;
    return this.lease(d, leaseUntil);
  }

  async finishAttempt(
    lease: DeliveryLease,
    outcome: AttemptOutcome,
    at: string,
  ): Promise<WebhookDelivery | null> {
    const { id } = lease;
    const d = this.deliveries.get(id);
    if (!d || this.leases.get(id)?.token !== lease.lease_token) return null;
    this.leases.delete(id);
    const next: WebhookDelivery = {
      ...d,
      attempts: [...d.attempts, outcome.attempt].slice(-MAX_STORED_ATTEMPTS),
      status: outcome.status,
      next_attempt_at: outcome.next_attempt_at,
      scheduled_attempts: d.scheduled_attempts + (outcome.scheduled ? 1 : 0),
      updated_at: at,
    };
    this.deliveries.set(id, next);
    if (next.status === 'PENDING') this.pending.add(id);
    else this.pending.delete(id);
    // Re-set so the order stays that of finishing: a delivery retried by hand moves to the end.
    this.expiries.delete(id);
    const expiresAt = deliveryExpiry(next.status, at, this.deliveryRetentionMs);
    if (expiresAt !== null) this.expiries.set(id, expiresAt);
    this.expire(Date.parse(at));
    return structuredClone(next);
  }

  private ofEndpoint(tenantId: string, endpointId: string): WebhookDelivery[] {
    return [...this.deliveries.values()].filter(
      (d) => d.tenant_id === tenantId && d.endpoint_id === endpointId,
    );
  }

  async attemptCounts(
    tenantId: string,
    endpointId: string,
    since: readonly Date[],
  ): Promise<AttemptCounts[]> {
    const counts = since.map(() => ({ attempts: 0, succeeded: 0 }));
    for (const d of this.ofEndpoint(tenantId, endpointId))
      for (const a of d.attempts)
        since.forEach((s, i) => {
          if (Date.parse(a.attempted_at) < s.getTime()) return;
          counts[i]!.attempts++;
          if (a.error === null) counts[i]!.succeeded++;
        });
    return counts;
  }

  async failedSince(tenantId: string, endpointId: string, since: Date, limit: number): Promise<string[]> {
    return this.ofEndpoint(tenantId, endpointId)
      .filter((d) => d.status === 'FAILED' && Date.parse(d.created_at) >= since.getTime())
      .map((d) => d.id)
      .sort()
      .slice(0, limit);
  }

  async requeueFailed(
    tenantId: string,
    endpointId: string,
    ids: readonly string[],
    now: Date,
  ): Promise<number> {
    let requeued = 0;
    for (const id of ids) {
      const d = this.deliveries.get(id);
      if (!d || d.tenant_id !== tenantId || d.endpoint_id !== endpointId) continue;
      if (d.status !== 'FAILED' || this.leased(id, now)) continue;
      const at = now.toISOString();
      this.deliveries.set(id, {
        ...d,
        status: 'PENDING',
        next_attempt_at: at,
        scheduled_attempts: 0,
        updated_at: at,
      });
      this.pending.add(id);
      this.expiries.delete(id);
      requeued++;
    }
    return requeued;
  }

  async backlog(): Promise<{ pending: number; oldestCreatedAt: string | null }> {
    let pending = 0;
    let oldest: string | null = null;
    for (const id of this.pending) {
      const d = this.deliveries.get(id)!;
      pending++;
      if (oldest === null || d.created_at < oldest) oldest = d.created_at;
    }
    return { pending, oldestCreatedAt: oldest };
  }

  async pendingEvents(limit: number): Promise<AuditEvent[]> {
    return this.outbox.events(limit);
  }

  async markSent(eventIds: string[]): Promise<void> {
    this.outbox.markSent(eventIds);
  }
}
