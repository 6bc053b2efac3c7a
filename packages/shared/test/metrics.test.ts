import { Router } from 'express';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createLogger, processMetrics, timeToHeaders } from '../src/observability';
import { ProcessMetrics } from '../src/observability/metrics';
import { OutboxRelay, SpoolingPublisher } from '../src/events';
import { baseApp, healthRoutes, listen, route } from '../src/http';
import { anyEvent, FlakyPublisher, MapOutbox } from '../src/testing';

const logger = createLogger('test', 'silent');
const apiCall = (occurredAt?: Date) =>
  anyEvent({ type: 'API_CALL', tenantId: 'tnt_x', resource: null, data: {}, occurredAt });

/** The value of one gauge of the process registry, as a scrape would read it. */
async function gauge(name: string): Promise<number> {
  const metric = await processMetrics().registry.getSingleMetric(name)!.get();
  return metric.values.reduce((sum, v) => sum + v.value, 0);
}

describe('metrics', () => {
  it('when requests are observed, then each label set is one series with cumulative buckets, its sum and count', async () => {
    const metrics = new ProcessMetrics();
    const labels = { service: 'verify', method: 'POST', route: '/v1/verify' };
    metrics.observeHttp('verify', 'POST', '/v1/verify', 200, 0.0007);
    metrics.observeHttp('verify', 'POST', '/v1/verify', 200, 0.02);
    metrics.observeHttp('verify', 'POST', '/v1/verify', 404, 30);
    const text = await metrics.registry.metrics();
    const line = (name: string, extra: Record<string, string>) =>
      `${name}{${Object.entries({ ...labels, ...extra })
        .map(([k, v]) => `${k}="${v}"`)
        .join(',')}}`;
    expect(text).toContain(`${line('http_requests_total', { status: '200' })} 2\n`);
    expect(text).toContain(`${line('http_requests_total', { status: '404' })} 1\n`);
    expect(text).toContain(
      `${line('http_request_duration_seconds_bucket', { status: '200', le: '0.0005' })} 0\n`,
    );
    expect(text).toContain(
      `${line('http_request_duration_seconds_bucket', { status: '200', le: '0.001' })} 1\n`,
    );
    expect(text).toContain(
      `${line('http_request_duration_seconds_bucket', { status: '200', le: '0.025' })} 2\n`,
    );
    expect(text).toContain(
      `${line('http_request_duration_seconds_bucket', { status: '404', le: '10' })} 0\n`,
    );
    expect(text).toContain(
      `${line('http_request_duration_seconds_bucket', { status: '404', le: '+Inf' })} 1\n`,
    );
    expect(text).toContain(`${line('http_request_duration_seconds_sum', { status: '404' })} 30\n`);
    expect(text).toContain(`${line('http_request_duration_seconds_count', { status: '200' })} 2\n`);
    expect(text).toContain('# TYPE http_request_duration_seconds histogram\n');
    expect(text).toContain('# TYPE http_requests_total counter\n');

    metrics.countVerifyDecision('DENY', 'MANDATE_SUSPENDED');
    metrics.countVerifyDecision('DENY', 'MANDATE_SUSPENDED');
    expect(await metrics.registry.metrics()).toContain(
      'verify_decisions_total{decision="DENY",reason="MANDATE_SUSPENDED"} 2\n',
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

  it('when an answer is held open, then its request is timed to its headers, not to its end', async () => {
    const app = baseApp('metrics-held-test');
    healthRoutes(app, async () => ({}));
    const router = Router();
    route(router, '/held', {
      get: (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/x-ndjson' });
        res.flushHeaders();
        timeToHeaders(res);
        setTimeout(() => res.end('{}\n'), 300);
      },
    });
    route(router, '/slow', { get: (_req, res) => void setTimeout(() => res.json({}), 300) });
    app.use(router);
    const server = await listen(app, 0);
    try {
      for (const p of ['/held', '/slow']) await (await fetch(`${server.url}${p}`)).text();
      const text = await (await fetch(`${server.url}/metrics`)).text();
      const sum = (r: string) =>
        Number(
          new RegExp(
            `http_request_duration_seconds_sum\\{service="metrics-held-test",method="GET",route="${r}",status="200"\\} (\\S+)`,
          ).exec(text)![1],
        );
      expect(sum('/slow')).toBeGreaterThanOrEqual(0.29);
      expect(sum('/held')).toBeLessThan(0.1);
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
    const publisher = new FlakyPublisher(true);
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
    const spool = await SpoolingPublisher.open(new FlakyPublisher(true), {
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
