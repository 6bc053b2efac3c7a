import { auditEventSchema, type AuditEvent } from '../events';
import type { BatchHandler, EventHandler, EventPublisher, EventSource } from './types';
import type { Logger } from '../logger';

/**
 * The embedded mode's broker: publish hands events to the subscribed handlers on the next tick,
 * so producers never wait on consumers. Events published before a subscriber starts are kept
 * until one does.
 */
export class InProcessBus implements EventPublisher, EventSource {
  readonly kind = 'in-process' as const;
  private handlers: EventHandler[] = [];
  private backlog: AuditEvent[] = [];
  private inFlight = new Set<Promise<void>>();

  constructor(private readonly logger?: Logger) {}

  async publish(events: AuditEvent[]): Promise<void> {
    for (const event of events) auditEventSchema.parse(event);
    if (this.handlers.length === 0) {
      this.backlog.push(...events);
      return;
    }
    for (const event of events) this.dispatch(event);
  }

  private dispatch(event: AuditEvent) {
    for (const handler of this.handlers) {
      const p: Promise<void> = new Promise<void>((r) => setImmediate(r))
        .then(() => handler(structuredClone(event)))
        .catch((err) => this.logger?.error({ err, eventId: event.id }, 'in-process event handler failed'))
        .finally(() => this.inFlight.delete(p));
      this.inFlight.add(p);
    }
  }

  async start(handler: EventHandler): Promise<void> {
    this.handlers.push(handler);
    const backlog = this.backlog;
    this.backlog = [];
    for (const event of backlog) this.dispatch(event);
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
