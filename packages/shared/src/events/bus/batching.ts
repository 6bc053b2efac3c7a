import type { AuditEvent } from '../events';
import type { EventPublisher } from './types';

/**
 * How long gateway and verify let a batch of events fill before it goes to the broker, by default
 * (their PUBLISH_BATCH_DELAY_MS). The broker's CPU goes per message (two quorum queues each): 50 ms
 * cut RabbitMQ's CPU per verify ~70 % against 5 ms (docs/PERFORMANCE.md, round 8), 200 ms about
 * half again against 50 (round 10), at 200 ms more before an event reaches audit. Each event is
 * journaled before the answer whatever the window.
 */
export const DEFAULT_PUBLISH_BATCH_DELAY_MS = 200;

/** The pending batch: its events and the one promise every publisher of it gets. */
interface Batch {
  events: AuditEvent[];
  done: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

function newBatch(): Batch {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const done = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { events: [], done, resolve, reject };
}

/**
 * Gathers events published within a short window into one broker round trip (one batch of
 * confirms instead of one per request). Each caller's promise still settles with its own batch:
 * the callers of one batch share its promise (one promise per batch, not one per call).
 */
export class BatchingPublisher implements EventPublisher {
  private batch?: Batch;
  private timer?: NodeJS.Timeout;
  private inFlight = new Set<Promise<void>>();
  private readonly maxBatch: number;
  private readonly maxDelayMs: number;
  private readonly flushNow = () => this.flush();

  constructor(
    private readonly inner: EventPublisher,
    options: { maxBatch?: number; maxDelayMs?: number } = {},
  ) {
    this.maxBatch = options.maxBatch ?? 200;
    this.maxDelayMs = options.maxDelayMs ?? 5;
  }

  get kind() {
    return this.inner.kind;
  }

  accepting(): boolean {
    return this.inner.accepting?.() ?? true;
  }

  publish(events: AuditEvent[]): Promise<void> {
    if (events.length === 0) return Promise.resolve();
    const batch = (this.batch ??= newBatch());
    for (const event of events) batch.events.push(event);
    if (batch.events.length >= this.maxBatch) this.flush();
    else this.timer ??= setTimeout(this.flushNow, this.maxDelayMs);
    return batch.done;
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.batch;
    this.batch = undefined;
    if (!batch) return;
    const p = this.inner
      .publish(batch.events)
      .then(batch.resolve, batch.reject)
      .finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
  }

  async close(): Promise<void> {
    this.flush();
    await Promise.allSettled([...this.inFlight]);
    await this.inner.close();
  }
}
