import { Router } from 'express';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  OutboxRelay,
  ProcessMetrics,
  SpoolingPublisher,
  baseApp,
  buildEvent,
  createLogger,
  healthRoutes,
  listen,
  processMetrics,
  route,
  type AuditEvent,
  type EventPublisher,
  type OutboxStore,
} from '../src';

const logger = createLogger('test', 'silent');
const apiCall = (occurredAt?: Date) =>
  buildEvent({ type: 'API_CALL', tenantId: 'tnt_x', resource: null, data: {}, occurredAt });

/** The value of one gauge of the process registry, as a scrape would read it. */
async function gauge(name: string): Promise<number> {
  const metric = await processMetrics().registry.getSingleMetric(name)!.get();
  return metric.values.reduce((sum, v) => sum + v.value, 0);
}

class MapOutbox implements OutboxStore {
  readonly pending = new Map<string, AuditEvent>();
  async pendingEvents(limit: number) {
    return [...this.pending.values()].slice(0, limit);
  }
  async markSent(ids: string[]) {
    for (const id of ids) this.pending.delete(id);
  }
}

class SwitchablePublisher implements EventPublisher {
  readonly kind = 'rabbitmq' as const;
  down = true;
  async publish() {
    if (this.down) throw new Error('broker unreachable');
  }
  async close() {}
}

describe('metrics', () => {
  it('when the same route and status are observed twice, then one labelled child is made and counts both', async () => {
    const metrics = new ProcessMetrics();
    const labels = jest.spyOn(metrics.httpRequests, 'labels');
    metrics.observeHttp('verify', 'POST', '/v1/verify', 200, 0.001);
    metrics.observeHttp('verify', 'POST', '/v1/verify', 200, 0.002);
    metrics.observeHttp('verify', 'POST', '/v1/verify', 404, 0.002);
    expect(labels).toHaveBeenCalledTimes(2);
    const text = await metrics.registry.metrics();
    expect(text).toContain(
      'http_requests_total{service="verify",method="POST",route="/v1/verify",status="200"} 2',
    );
    expect(text).toContain(
      'http_request_duration_seconds_count{service="verify",method="POST",route="/v1/verify",status="404"} 1',
    );
  });

  it('when express answers a route, then it is counted by its pattern, and GET /metrics serves the text format', async () => {
    const app = baseApp('metrics-test');
    healthRoutes(app, async () => ({}));
    const router = Router();
    route(router, '/v1/things/:id', { get: (_req, res) => void res.json({}) });
    app.use(router);
    const server = await listen(app, 0);
    try {
      await fetch(`${server.url}/v1/things/thg_1`);
      await fetch(`${server.url}/v1/things/thg_2`);
      await fetch(`${server.url}/nowhere/thg_3`);
      const res = await fetch(`${server.url}/metrics`);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      const text = await res.text();
      expect(text).toContain(
        'http_requests_total{service="metrics-test",method="GET",route="/v1/things/:id",status="200"} 2',
      );
      expect(text).toContain(
        'http_requests_total{service="metrics-test",method="GET",route="(unmatched)",status="404"} 1',
      );
      expect(text).not.toContain('thg_');
      expect(text).toContain('nodejs_eventloop_lag_p99_seconds');
    } finally {
      await server.close();
    }
  });

  it('when the outbox relay cannot publish, then the backlog and its age are reported, and both drop to 0 once it can', async () => {
    const store = new MapOutbox();
    const old = apiCall(new Date(Date.now() - 60_000));
    const recent = apiCall();
    store.pending.set(old.id, old);
    store.pending.set(recent.id, recent);
    const publisher = new SwitchablePublisher();
    const relay = new OutboxRelay(store, publisher, logger, { pollIntervalMs: 60_000 });
    relay.start();
    try {
      await expect(relay.drain()).rejects.toThrow('broker unreachable');
      expect(relay.backlog()).toEqual({ events: 2, oldestMs: Date.parse(old.occurred_at) });
      expect(await gauge('outbox_backlog_events')).toBeGreaterThanOrEqual(2);
      expect(await gauge('outbox_oldest_event_age_seconds')).toBeGreaterThanOrEqual(59);

      publisher.down = false;
      await relay.drain();
      expect(relay.backlog()).toEqual({ events: 0, oldestMs: null });
    } finally {
      await relay.stop();
    }
    expect(processMetrics().outboxSources.has(relay)).toBe(false);
  });

  it('when the spool holds events, then event_spool_bytes reports them until it is closed', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'metrics-spool-'));
    const spool = await SpoolingPublisher.open(new SwitchablePublisher(), {
      dir: path.join(dir, 'spool'),
      logger,
      retryDelayMs: 60_000,
      closeTimeoutMs: 100,
    });
    try {
      await spool.publish([apiCall()]);
      expect(spool.pendingBytes()).toBeGreaterThan(0);
      expect(await gauge('event_spool_bytes')).toBeGreaterThanOrEqual(spool.pendingBytes());
    } finally {
      await spool.close();
      await rm(dir, { recursive: true, force: true });
    }
    expect(processMetrics().spoolSources.has(spool)).toBe(false);
  });
});
