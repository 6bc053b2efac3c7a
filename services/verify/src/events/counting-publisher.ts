import type { AuditEvent, EventPublisher } from '@mandate/shared/events';

/** Counts the calls that reach `inner` (placed under the batcher, it counts broker round trips). */
export class CountingPublisher implements EventPublisher {
  constructor(
    private readonly inner: EventPublisher,
    private readonly count: (events: number) => void,
  ) {}

  get kind() {
    return this.inner.kind;
  }

  accepting(): boolean {
    return this.inner.accepting?.() ?? true;
  }

  publish(events: AuditEvent[]): Promise<void> {
    this.count(events.length);
    return this.inner.publish(events);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
