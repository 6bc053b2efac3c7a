import { processMetrics, type Logger } from '@mandate/shared/observability';
import { type AuditEvent, type EventSource } from '@mandate/shared/events';
import { isServedInstant, recordEvents } from '../domain/events';
import type { EventStore } from '../store/event-store';

export type ConsumerState = 'running' | 'stopping' | 'stopped';

export interface AuditConsumer {
  readonly state: ConsumerState;
  /** Events written since start (redeliveries included), for readiness and logs. */
  readonly handled: number;
  /** Waits for in-flight messages to be written and acked, then detaches from the source. */
  stop(): Promise<void>;
}

/**
 * When the newest of the events occurred (ms; 0 for none): what the consumer's lag is measured
 * from (how old the newest event just stored was, what a reader of the trail is behind). Instants
 * in the served form compare as text, so one Date.parse per batch instead of one per event.
 */
function newestInstant(events: readonly AuditEvent[]): number {
  let newest = 0;
  let newestServed: string | undefined;
  for (const { occurred_at: at } of events)
    if (isServedInstant(at)) {
      if (newestServed === undefined || at > newestServed) newestServed = at;
    } else newest = Math.max(newest, Date.parse(at) || 0);
  return newestServed === undefined ? newest : Math.max(newest, Date.parse(newestServed));
}

/**
 * The queue entry point: every event the source delivers has already been validated (invalid
 * messages are dead-lettered by the source); the handler writes a batch, and the source acks the
 * batch after the write. A failed write throws, so the source offers the messages again later.
 */
export async function startAuditConsumer(
  source: EventSource,
  store: EventStore,
  logger: Logger,
  options: { maxBatch?: number; maxDelayMs?: number } = {},
): Promise<AuditConsumer> {
  let state: ConsumerState = 'running';
  let handled = 0;
  const metrics = processMetrics();
  // One idempotent insertMany per batch: redeliveries and duplicates inside a batch are stored once.
  await source.startBatched(
    async (events) => {
      await recordEvents(store, events);
      handled += events.length;
      metrics.auditBatchSize.observe(events.length);
      const newest = Math.max(metrics.auditLastOccurredMs ?? 0, newestInstant(events));
      if (newest > 0) metrics.auditLastOccurredMs = newest;
      logger.debug({ count: events.length }, 'audit events recorded');
    },
    { maxBatch: options.maxBatch ?? 100, maxDelayMs: options.maxDelayMs ?? 20 },
  );
  logger.info({ source: source.kind, store: store.kind }, 'audit consumer started');
  return {
    get state() {
      return state;
    },
    get handled() {
      return handled;
    },
    async stop() {
      if (state !== 'running') return;
      state = 'stopping';
      await source.stop();
      state = 'stopped';
      logger.info({ handled }, 'audit consumer stopped');
    },
  };
}
