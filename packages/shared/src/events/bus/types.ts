import type { AuditEvent } from '../events';

/** Producers publish audit events through this; adapters decide where they go. */
export interface EventPublisher {
  readonly kind: 'rabbitmq' | 'in-process';
  /** Resolves once the broker has confirmed every event (or the in-process bus has taken them). */
  publish(events: AuditEvent[]): Promise<void>;
  /**
   * False while events handed over now could not be kept (the local event spool is full, the broker
   * away): a caller answers 503 with Retry-After instead of a 2xx whose event would be lost
   * (docs/DECISIONS.md, "Event spool full"). Absent: always accepting.
   */
  accepting?(): boolean;
  close(): Promise<void>;
}

export type EventHandler = (event: AuditEvent) => Promise<void>;
export type BatchHandler = (events: AuditEvent[]) => Promise<void>;

export interface BatchOptions {
  /** Most events handed over at once. */
  maxBatch?: number;
  /** Longest a received event waits for its batch to fill. */
  maxDelayMs?: number;
}

/** Consumers receive validated events through this; invalid messages never reach the handler. */
export interface EventSource {
  readonly kind: 'rabbitmq' | 'in-process';
  start(handler: EventHandler): Promise<void>;
  /** Like start, but hands over events in batches (one write per batch); acks follow the batch's write. */
  startBatched(handler: BatchHandler, options?: BatchOptions): Promise<void>;
  stop(): Promise<void>;
  /**
   * The webhook queue only: from now on it also gets the events of these types ("*": every type).
   * Rejects when the broker cannot be reached, so the caller can refuse what needed them. Absent
   * where every event reaches every consumer anyway (the in-process bus).
   */
  addRoutes?(eventTypes: readonly string[]): Promise<void>;
}
