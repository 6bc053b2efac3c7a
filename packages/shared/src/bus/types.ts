import type { AuditEvent } from '../events';

/** Producers publish audit events through this; adapters decide where they go. */
export interface EventPublisher {
  readonly kind: 'rabbitmq' | 'in-process';
  /** Resolves once the broker has confirmed every event (or the in-process bus has taken them). */
  publish(events: AuditEvent[]): Promise<void>;
  close(): Promise<void>;
}

export type EventHandler = (event: AuditEvent) => Promise<void>;

/** Consumers receive validated events through this; invalid messages never reach the handler. */
export interface EventSource {
  readonly kind: 'rabbitmq' | 'in-process';
  start(handler: EventHandler): Promise<void>;
  stop(): Promise<void>;
}
