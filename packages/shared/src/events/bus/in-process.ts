import { auditEventSchema, type AuditEvent } from '../events';
import type { BatchHandler, EventHandler, EventPublisher, EventSource } from './types';
import type { Logger } from '../../observability/logger';

/**
 * The embedded mode's broker: publish hands events to the subscribed handlers on the next tick,
 * so producers never wait on consumers. Events published before a subscriber starts are kept
 * until one does.
 */
export class InProcessBus implements EventPublisher, EventSource {
  readonly kind = 'in-process' as const;
  private handlers: { handler: EventHandler; types?: ReadonlySet<string> }[] = [];
  private backlog: AuditEvent[] = [];
  private inFlight = new Set<Promise<void>>();

  constructor(private readonly logger?: Logger) {}

  async publish(events: AuditEvent[]): Promise<void> {
    for (const event of events) auditEventSchema.parse(event);
    // Until a consumer starts, its events wait here; subscribers only ever see what comes after.
    const keep = !this.handlers.some((h) => h.types === undefined);
    for (const event of events) {
      if (keep) this.backlog.push(event);
      for (const entry of this.handlers) this.dispatch(entry, event);
    }
  }

  private dispatch(entry: { handler: EventHandler; types?: ReadonlySet<string> }, event: AuditEvent) {
    if (entry.types && !entry.types.has(event.type)) return;
    const p: Promise<void> = new Promise<void>((r) => setImmediate(r))
      .then(() => entry.handler(structuredClone(event)))
      .catch((err) => this.logger?.error({ err, eventId: event.id }, 'in-process event handler failed'))
      .finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
  }

  async start(handler: EventHandler): Promise<void> {
    const entry = { handler };
    this.handlers.push(entry);
    const backlog = this.backlog;
    this.backlog = [];
    for (const event of backlog) this.dispatch(entry, event);
  }

  /**
   * A fan-out subscription to some event types, as a RabbitSubscriber's exclusive queue gives
   * each replica: events published from now on, not the backlog kept for the consumer.
   */
  async subscribe(eventTypes: readonly string[], handler: EventHandler): Promise<void> {
    this.handlers.push({ handler, types: new Set(eventTypes) });
  }

  /** In-process delivery is already per event and immediate; a batch is one event. */
  async startBatched(handler: BatchHandler): Promise<void> {
    await this.start((event) => handler([event]));
  }

  /** Waits until every dispatched event has been handled (tests and shutdown). */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  async stop(): Promise<void> {
    await this.drain();
    this.handlers = [];
  }

  async close(): Promise<void> {
    await this.drain();
  }
}
