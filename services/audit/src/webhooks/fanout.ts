import { type Clock } from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import { type AuditEvent, type EventSource } from '@mandate/shared/events';
import { deliveryPayload, pendingDelivery, subscribes, type WebhookDelivery } from './webhook';
import type { WebhookStore } from './webhook-store';

/**
 * The deliveries a batch of events makes: one per (event, ENABLED endpoint of its tenant that
 * subscribes to its type and existed when it occurred). Platform events (no tenant) go nowhere.
 */
export async function deliveriesFor(
  store: WebhookStore,
  events: readonly AuditEvent[],
  now: Date,
): Promise<WebhookDelivery[]> {
  const tenants = [...new Set(events.flatMap((e) => (e.tenant_id ? [e.tenant_id] : [])))];
  const endpoints = new Map(
    await Promise.all(tenants.map(async (t) => [t, await store.enabledEndpoints(t)] as const)),
  );
  const at = now.toISOString();
  const out: WebhookDelivery[] = [];
  for (const event of events) {
    for (const endpoint of endpoints.get(event.tenant_id ?? '') ?? []) {
      if (!subscribes(endpoint, event.type)) continue;
      // An endpoint receives what happens from its creation on, not the backlog before it.
      if (Date.parse(event.occurred_at) < Date.parse(endpoint.created_at)) continue;
      out.push(
        pendingDelivery(
          {
            tenant_id: endpoint.tenant_id,
            endpoint_id: endpoint.id,
            event_id: event.id,
            event_type: event.type,
            payload: deliveryPayload(event),
          },
          at,
        ),
      );
    }
  }
  return out;
}

export interface WebhookFanout {
  stop(): Promise<void>;
}

/**
 * The webhook queue's entry point: each batch's deliveries are stored (each (endpoint, event)
 * once, so a redelivered message adds nothing) before the source acks the batch; a failed write
 * throws and the source offers the messages again. Then the local worker is kicked, so the first
 * attempt does not wait for its poll.
 */
export async function startWebhookFanout(
  source: EventSource,
  deps: { store: WebhookStore; clock: Clock; logger: Logger; onStored: () => void },
): Promise<WebhookFanout> {
  await source.startBatched(
    async (events) => {
      const deliveries = await deliveriesFor(deps.store, events, deps.clock.now());
      if (deliveries.length === 0) return;
      await deps.store.insertDeliveries(deliveries);
      deps.onStored();
    },
    { maxBatch: 100, maxDelayMs: 5 },
  );
  deps.logger.info({ source: source.kind, store: deps.store.kind }, 'webhook fan-out started');
  return { stop: () => source.stop() };
}
