import { badRequest, conflict, newId, notFound, type CallerContext, type Clock } from '@mandate/shared/core';
import { buildEvent, type EventData, type EventRelay, type EventSource } from '@mandate/shared/events';
import { toPage, type Page } from '@mandate/shared/contract';
import {
  MAX_WEBHOOK_ENDPOINTS,
  WEBHOOK_REPLAY_MAX,
  WEBHOOK_STATS_WINDOWS,
  WEBHOOK_TEST_EVENT_TYPE,
  type ReplayWebhookDeliveriesBody,
  type CreateWebhookEndpointBody,
  type UpdateWebhookEndpointBody,
  type WebhookDeliveryView,
  type WebhookEndpointStatsView,
  type WebhookEndpointView,
  type WebhookReplayView,
} from '../contract';
import type { SecretBox } from './secret-box';
import {
  checkWebhookUrl,
  endpointLimitReached,
  newWebhookSecret,
  pendingDelivery,
  type StoredSecret,
  type WebhookDelivery,
  type WebhookEndpoint,
} from './webhook';
import type { DeliveryPageQuery, EndpointChanges, PageQuery, WebhookStore } from './webhook-store';
import type { DeliveryWorker, WebhookSettings } from './worker';

/** What the webhook use cases need. */
export interface WebhookDeps {
  store: WebhookStore;
  /** The webhook queue: an endpoint's types are routed to it before the endpoint is stored. */
  source: EventSource;
  box: SecretBox;
  relay: EventRelay;
  clock: Clock;
  settings: WebhookSettings;
  worker: DeliveryWorker;
}

/** How long the previous secret keeps signing after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;
/** Guarded writes that lost a race are decided again this many times before answering 409. */
const ATTEMPTS = 5;

const systemLookup = async (hostname: string) => {
  const { lookup } = await import('node:dns/promises');
  return (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);
};

/**
 * An endpoint URL as a caller that may only read webhooks sees it, and as the trail keeps it: without
 * its query string, where receivers often put a capability (docs/WEBHOOKS.md#who-sees-the-url). A URL
 * has no fragment (refused at creation), so everything from the first `?` is the query.
 */
export function urlWithoutQuery(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/** Who sees endpoint URLs whole: those who may change them (tenants:admin, a JWT's tenant:write). */
export function managesWebhooks(caller: CallerContext): boolean {
  return caller.permissions.includes('tenants:admin') || caller.permissions.includes('tenant:write');
}

/** `whole`: the URL with its query string, for a caller that manages webhooks; else without. */
export function endpointView(e: WebhookEndpoint, whole = true): WebhookEndpointView {
  return {
    id: e.id,
    url: whole ? e.url : urlWithoutQuery(e.url),
    description: e.description,
    event_types: e.event_types,
    status: e.status,
    disabled_reason: e.disabled_reason,
    failing_since: e.failing_since,
    created_at: e.created_at,
    updated_at: e.updated_at,
  };
}

/**
 * Who sees a delivery's request body: it is the event itself, so those who may read events
 * (events:read) or manage webhooks; a viewer of webhooks alone sees the delivery without it
 * (docs/WEBHOOKS.md, "Debugging a receiver").
 */
export function seesRequestBodies(caller: CallerContext): boolean {
  return managesWebhooks(caller) || caller.permissions.includes('events:read');
}

/** `withBody` false: the request body left out (seesRequestBodies). */
export function deliveryView(d: WebhookDelivery, withBody = true): WebhookDeliveryView {
  return {
    id: d.id,
    endpoint_id: d.endpoint_id,
    event_id: d.event_id,
    event_type: d.event_type,
    status: d.status,
    request_body: withBody ? d.payload : null,
    attempts: d.attempts,
    next_attempt_at: d.next_attempt_at,
    created_at: d.created_at,
    updated_at: d.updated_at,
  };
}

const resourceOf = (id: string) => ({ type: 'webhook_endpoint', id });

function checkUrl(deps: WebhookDeps, url: string): Promise<void> {
  return checkWebhookUrl(url, {
    allowLoopback: deps.settings.allowLoopback,
    lookup: deps.settings.lookup ?? systemLookup,
  });
}

async function existing(deps: WebhookDeps, tenantId: string, id: string): Promise<WebhookEndpoint> {
  const endpoint = await deps.store.getEndpoint(tenantId, id);
  if (!endpoint) throw notFound('Webhook endpoint not found');
  return endpoint;
}

export async function createEndpoint(
  deps: WebhookDeps,
  caller: CallerContext,
  tenantId: string,
  body: CreateWebhookEndpointBody,
): Promise<WebhookEndpointView & { secret: string }> {
  await checkUrl(deps, body.url);
  const secret = newWebhookSecret();
  const id = newId('whe');
  for (let i = 0; i < ATTEMPTS; i++) {
    const used = new Set(await deps.store.usedSlots(tenantId));
    const free = Array.from({ length: MAX_WEBHOOK_ENDPOINTS }, (_, n) => n).filter((n) => !used.has(n));
    if (free.length === 0) throw endpointLimitReached(MAX_WEBHOOK_ENDPOINTS);
    // Once a refusal is ruled out, and before created_at is taken: every event that occurs after
    // it is already routed to the queue (once: a retry after a lost slot finds it bound).
    if (i === 0) await deps.source.addRoutes?.(body.event_types);
    // A random free slot: concurrent creates rarely pick the same one, so few have to read again.
    const slot = free[Math.floor(Math.random() * free.length)]!;
    const now = deps.clock.now().toISOString();
    const endpoint: WebhookEndpoint = {
      id,
      tenant_id: tenantId,
      url: body.url,
      description: body.description ?? null,
      event_types: body.event_types,
      status: 'ENABLED',
      disabled_reason: null,
      failing_since: null,
      secrets: [{ sealed: deps.box.seal(secret), expires_at: null }],
      slot,
      version: 1,
      created_at: now,
      updated_at: now,
    };
    const event = buildEvent({
      type: 'WEBHOOK_ENDPOINT_CREATED',
      tenantId,
      resource: resourceOf(id),
      data: {
        endpoint_id: id,
        url: urlWithoutQuery(endpoint.url),
        event_types: endpoint.event_types,
        status: endpoint.status,
      },
      caller,
    });
    // The slot is the guard: a concurrent create that took it makes this insert refuse; read again.
    if (await deps.store.insertEndpoint(endpoint, [event])) {
      await deps.relay.publishNow([event]);
      return { ...endpointView(endpoint), secret };
    }
  }
  throw conflict('Webhook endpoints changed concurrently; try again');
}

export async function listEndpoints(
  deps: WebhookDeps,
  caller: CallerContext,
  tenantId: string,
  page: PageQuery,
): Promise<Page<WebhookEndpointView>> {
  const items = await deps.store.listEndpoints(tenantId, page);
  const whole = managesWebhooks(caller);
  return toPage(
    items.map((e) => endpointView(e, whole)),
    page.limit,
    (e) => e.id,
  );
}

export async function getEndpoint(
  deps: WebhookDeps,
  caller: CallerContext,
  tenantId: string,
  id: string,
): Promise<WebhookEndpointView> {
  return endpointView(await existing(deps, tenantId, id), managesWebhooks(caller));
}

/** Reads, decides and writes guarded by the version read; a lost race is decided again. */
async function change(
  deps: WebhookDeps,
  tenantId: string,
  id: string,
  decide: (
    current: WebhookEndpoint,
    now: Date,
  ) => { changes: EndpointChanges; data: Omit<EventData<'WEBHOOK_ENDPOINT_UPDATED'>, 'endpoint_id'> },
  caller: CallerContext | undefined,
): Promise<WebhookEndpoint> {
  for (let i = 0; i < ATTEMPTS; i++) {
    const current = await existing(deps, tenantId, id);
    const now = deps.clock.now();
    const { changes, data } = decide(current, now);
    const event = buildEvent({
      type: 'WEBHOOK_ENDPOINT_UPDATED',
      tenantId,
      resource: resourceOf(id),
      data: { endpoint_id: id, ...data },
      caller,
    });
    const updated = await deps.store.updateEndpoint(current, changes, now.toISOString(), [event]);
    if (updated) {
      await deps.relay.publishNow([event]);
      return updated;
    }
  }
  throw conflict('Webhook endpoint changed concurrently; try again');
}

export async function updateEndpoint(
  deps: WebhookDeps,
  caller: CallerContext,
  tenantId: string,
  id: string,
  body: UpdateWebhookEndpointBody,
): Promise<WebhookEndpointView> {
  await existing(deps, tenantId, id);
  if (body.url !== undefined) await checkUrl(deps, body.url);
  // Before the change is stored: the new types' events are routed from the moment it applies.
  if (body.event_types !== undefined) await deps.source.addRoutes?.(body.event_types);
  const updated = await change(
    deps,
    tenantId,
    id,
    (current) => {
      const changes: EndpointChanges = {};
      if (body.url !== undefined) changes.url = body.url;
      if (body.event_types !== undefined) changes.event_types = body.event_types;
      if (body.description !== undefined) changes.description = body.description;
      if (body.status === 'ENABLED' && current.status !== 'ENABLED') {
        // Enabled again by a person: its failing history starts over.
        Object.assign(changes, { status: 'ENABLED', disabled_reason: null, failing_since: null });
      } else if (body.status === 'DISABLED' && current.status !== 'DISABLED') {
        Object.assign(changes, { status: 'DISABLED', disabled_reason: 'manual' });
      }
      return {
        changes,
        data: {
          changed: Object.keys(body).sort(),
          url: urlWithoutQuery(changes.url ?? current.url),
          event_types: changes.event_types ?? current.event_types,
          status: changes.status ?? current.status,
        },
      };
    },
    caller,
  );
  return endpointView(updated);
}

export async function deleteEndpoint(
  deps: WebhookDeps,
  caller: CallerContext,
  tenantId: string,
  id: string,
): Promise<{ id: string; deleted: true }> {
  for (let i = 0; i < ATTEMPTS; i++) {
    const current = await existing(deps, tenantId, id);
    const event = buildEvent({
      type: 'WEBHOOK_ENDPOINT_DELETED',
      tenantId,
      resource: resourceOf(id),
      data: { endpoint_id: id, url: urlWithoutQuery(current.url) },
      caller,
    });
    if (await deps.store.deleteEndpoint(current, [event])) {
      await deps.relay.publishNow([event]);
      return { id, deleted: true };
    }
  }
  throw conflict('Webhook endpoint changed concurrently; try again');
}

export async function rotateSecret(
  deps: WebhookDeps,
  caller: CallerContext,
  tenantId: string,
  id: string,
): Promise<WebhookEndpointView & { secret: string; previous_secret_expires_at: string }> {
  const secret = newWebhookSecret();
  const sealed = deps.box.seal(secret);
  let expiresAt = '';
  const updated = await change(
    deps,
    tenantId,
    id,
    (current, now) => {
      expiresAt = new Date(now.getTime() + ROTATION_OVERLAP_MS).toISOString();
      // The current secret signs alongside the new one until expiresAt; older ones stop now.
      const previous = current.secrets.find((s) => s.expires_at === null);
      const secrets: StoredSecret[] = [{ sealed, expires_at: null }];
      if (previous) secrets.push({ sealed: previous.sealed, expires_at: expiresAt });
      return {
        changes: { secrets },
        data: { changed: ['secret'], previous_secret_expires_at: expiresAt },
      };
    },
    caller,
  );
  return { ...endpointView(updated), secret, previous_secret_expires_at: expiresAt };
}

/**
 * How long a manual attempt (test event, retry) is waited for before answering: well below the
 * gateway's 10 s upstream timeout, so a slow or unresolvable receiver never turns the call into a
 * 503. The attempt goes on; its outcome appears in the endpoint's deliveries.
 */
const MANUAL_ATTEMPT_WAIT_MS = 5_000;
const STILL_ATTEMPTING = Symbol('still attempting');

function within<T>(attempt: Promise<T>, ms: number): Promise<T | typeof STILL_ATTEMPTING> {
  // Whatever it ends with after the answer has gone is the worker's to record, not an unhandled rejection.
  attempt.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<typeof STILL_ATTEMPTING>((resolve) => {
    timer = setTimeout(() => resolve(STILL_ATTEMPTING), ms);
  });
  return Promise.race([attempt, late]).finally(() => clearTimeout(timer));
}

export async function sendTest(
  deps: WebhookDeps,
  tenantId: string,
  id: string,
): Promise<WebhookDeliveryView> {
  const endpoint = await existing(deps, tenantId, id);
  if (endpoint.status !== 'ENABLED') throw conflict('Webhook endpoint is disabled; enable it first');
  const now = deps.clock.now();
  const eventId = newId('evt');
  const at = now.toISOString();
  const data = {
    id: eventId,
    tenant_id: tenantId,
    type: WEBHOOK_TEST_EVENT_TYPE,
    occurred_at: at,
    resource: resourceOf(id),
    data: { endpoint_id: id, message: 'A test event sent from the webhook endpoints API' },
  };
  const delivery = pendingDelivery(
    {
      tenant_id: tenantId,
      endpoint_id: id,
      event_id: eventId,
      event_type: WEBHOOK_TEST_EVENT_TYPE,
      payload: JSON.stringify({ type: WEBHOOK_TEST_EVENT_TYPE, timestamp: at, data }),
    },
    at,
  );
  await deps.store.insertDeliveries([delivery]);
  const claimed = await deps.store.claimOne(delivery, now, new Date(now.getTime() + deps.worker.leaseMs));
  // A worker that claimed it first is attempting it already: answer what is stored.
  if (!claimed) return deliveryView((await deps.store.getDelivery(tenantId, id, delivery.id)) ?? delivery);
  // The first attempt of the schedule, made now: a failure is retried like any delivery's.
  const after = await within(deps.worker.attemptNow(claimed, endpoint, false), MANUAL_ATTEMPT_WAIT_MS);
  if (after === STILL_ATTEMPTING) return deliveryView(claimed);
  return deliveryView(after ?? delivery);
}

export async function listDeliveries(
  deps: WebhookDeps,
  caller: CallerContext,
  tenantId: string,
  endpointId: string,
  { withTotal, ...page }: DeliveryPageQuery & { withTotal?: boolean },
): Promise<Page<WebhookDeliveryView>> {
  await existing(deps, tenantId, endpointId);
  const [items, total] = await Promise.all([
    deps.store.listDeliveries(tenantId, endpointId, page),
    withTotal ? deps.store.countDeliveries(tenantId, endpointId, page) : undefined,
  ]);
  const withBody = seesRequestBodies(caller);
  const listed = toPage(
    items.map((d) => deliveryView(d, withBody)),
    page.limit,
    (d) => d.id,
    page.order,
  );
  return total === undefined ? listed : { ...listed, total };
}

export async function retryDelivery(
  deps: WebhookDeps,
  tenantId: string,
  endpointId: string,
  deliveryId: string,
): Promise<WebhookDeliveryView> {
  const endpoint = await existing(deps, tenantId, endpointId);
  const delivery = await deps.store.getDelivery(tenantId, endpointId, deliveryId);
  if (!delivery) throw notFound('Webhook delivery not found');
  if (endpoint.status !== 'ENABLED') throw conflict('Webhook endpoint is disabled; enable it first');
  const now = deps.clock.now();
  const claimed = await deps.store.claimOne(delivery, now, new Date(now.getTime() + deps.worker.leaseMs));
  if (!claimed) throw conflict('Webhook delivery is being attempted right now; try again shortly');
  const after = await within(deps.worker.attemptNow(claimed, endpoint), MANUAL_ATTEMPT_WAIT_MS);
  if (after === STILL_ATTEMPTING) return deliveryView(claimed);
  if (!after) throw conflict('Webhook delivery is being attempted right now; try again shortly');
  return deliveryView(after);
}

/** succeeded / attempts to four decimals; null without attempts. */
const rate = (succeeded: number, attempts: number) =>
  attempts === 0 ? null : Math.round((succeeded / attempts) * 10_000) / 10_000;

/** The success rate of an endpoint's attempts over 24 hours and 7 days (docs/WEBHOOKS.md, "Debugging a receiver"). */
export async function endpointStats(
  deps: WebhookDeps,
  tenantId: string,
  endpointId: string,
): Promise<WebhookEndpointStatsView> {
  await existing(deps, tenantId, endpointId);
  const now = deps.clock.now();
  const names = Object.keys(WEBHOOK_STATS_WINDOWS) as (keyof typeof WEBHOOK_STATS_WINDOWS)[];
  const since = names.map((n) => new Date(now.getTime() - WEBHOOK_STATS_WINDOWS[n]));
  const counts = await deps.store.attemptCounts(tenantId, endpointId, since);
  const windows = Object.fromEntries(
    names.map((n, i) => {
      const { attempts, succeeded } = counts[i]!;
      const window = {
        since: since[i]!.toISOString(),
        attempts,
        succeeded,
        failed: attempts - succeeded,
        success_rate: rate(succeeded, attempts),
      };
      return [n, window];
    }),
  ) as Pick<WebhookEndpointStatsView, keyof typeof WEBHOOK_STATS_WINDOWS>;
  return { endpoint_id: endpointId, as_of: now.toISOString(), ...windows };
}

/**
 * Puts the endpoint's FAILED deliveries created since `since` back to PENDING on a fresh schedule,
 * at most WEBHOOK_REPLAY_MAX per call (docs/WEBHOOKS.md, "Replaying failed deliveries"). The store's
 * guard makes a repeated call replay nothing twice; the worker sends them at its usual concurrency.
 */
export async function replayFailed(
  deps: WebhookDeps,
  tenantId: string,
  endpointId: string,
  body: ReplayWebhookDeliveriesBody,
): Promise<WebhookReplayView> {
  const endpoint = await existing(deps, tenantId, endpointId);
  const now = deps.clock.now();
  const since = new Date(body.since);
  if (since.getTime() > now.getTime()) throw badRequest('since must not be in the future');
  if (endpoint.status !== 'ENABLED') throw conflict('Webhook endpoint is disabled; enable it first');
  const ids = await deps.store.failedSince(tenantId, endpointId, since, WEBHOOK_REPLAY_MAX + 1);
  const batch = ids.slice(0, WEBHOOK_REPLAY_MAX);
  const dryRun = body.dry_run === true;
  const replayed = dryRun ? batch.length : await deps.store.requeueFailed(tenantId, endpointId, batch, now);
  if (replayed > 0 && !dryRun) deps.worker.kick();
  return {
    endpoint_id: endpointId,
    since: since.toISOString(),
    dry_run: dryRun,
    replayed,
    has_more: ids.length > WEBHOOK_REPLAY_MAX,
  };
}
