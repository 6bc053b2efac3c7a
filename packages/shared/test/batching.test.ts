import { BatchingPublisher, type AuditEvent, type EventPublisher } from '../src/events';
import { anyEvent } from '../src/testing';

class CountingPublisher implements EventPublisher {
  readonly kind = 'in-process' as const;
  calls: AuditEvent[][] = [];
  failNext = false;
  async publish(events: AuditEvent[]) {
    this.calls.push(events);
    if (this.failNext) {
      this.failNext = false;
      throw new Error('broker down');
    }
  }
  async close() {}
}

const event = () => anyEvent({ type: 'API_CALL', tenantId: 'tnt_x', resource: null, data: {} });

describe('BatchingPublisher', () => {
  it('when many events are published within the window, then they reach the broker in one call', async () => {
    const inner = new CountingPublisher();
    const batching = new BatchingPublisher(inner, { maxDelayMs: 20 });
    await Promise.all(Array.from({ length: 10 }, () => batching.publish([event()])));
    expect(inner.calls).toHaveLength(1);
    expect(inner.calls[0]).toHaveLength(10);
    await batching.close();
  });

  it('when the batch is full, then it is flushed without waiting for the timer', async () => {
    const inner = new CountingPublisher();
    const batching = new BatchingPublisher(inner, { maxBatch: 3, maxDelayMs: 10_000 });
    await Promise.all([1, 2, 3].map(() => batching.publish([event()])));
    expect(inner.calls.map((c) => c.length)).toEqual([3]);
    await batching.close();
  });

  it('when the broker refuses a batch, then every caller in it sees the error', async () => {
    const inner = new CountingPublisher();
    inner.failNext = true;
    const batching = new BatchingPublisher(inner, { maxDelayMs: 5 });
    const results = await Promise.allSettled([batching.publish([event()]), batching.publish([event()])]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    await batching.close();
  });
});
