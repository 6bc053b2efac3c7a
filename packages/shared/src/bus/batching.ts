import type { AuditEvent } from '../events';
import type { EventPublisher } from './types';

/**
 * Gathers events published within a short window into one broker round trip (one batch of
 * confirms instead of one per request). Each caller's promise still settles with its own batch.
 */
export class BatchingPublisher implements EventPublisher {
  private buffer: { events: AuditEvent[]; resolve: () => void; reject: (err: unknown) => void }[] = [];
  private buffered = 0;
  private timer?: NodeJS.Timeout;
  private inFlight = new Set<Promise<void>>();

  constructor(
    private readonly inner: EventPublisher,
    private readonly options: { maxBatch?: number; maxDelayMs?: number } = {},
  ) {}

  get kind() {
    return this.inner.kind;
  }

  publish(events: AuditEvent[]): Promise<void> {
    if (events.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.buffer.push({ events, resolve, reject });
      this.buffered += events.length;
      if (this.buffered >= (this.options.maxBatch ?? 200)) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.options.maxDelayMs ?? 5);
    });
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.buffer;
    this.buffer = [];
    this.buffered = 0;
    if (batch.length === 0) return;
    const p = this.inner
      .publish(batch.flatMap((b) => b.events))
      .then(
        () => batch.forEach((b) => b.resolve()),
        (err) => batch.forEach((b) => b.reject(err)),
      )
      .finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
  }

  async close(): Promise<void> {
    this.flush();
    await Promise.allSettled([...this.inFlight]);
    await this.inner.close();
  }
}
