import amqp from 'amqplib';
import { amqpTopology } from '@mandate/shared/events';
import {
  AMQP_URL,
  apiClient,
  createPaymentsMandate,
  createTenant,
  eventually,
  startStack,
  type Stack,
} from '../support/stack';

type Samples = { name: string; labels: Record<string, string>; value: number }[];

/** Parses the Prometheus text format (enough of it for these checks: one sample per line). */
function parseMetrics(text: string): Samples {
  const samples: Samples = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`unparseable metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** The sum of the samples of `name` whose labels include `labels`. */
function total(samples: Samples, name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/**
 * Every service's GET /metrics after a walk-through through the gateway: five processes on the
 * real RabbitMQ and Redis; each service is scraped on its own port, never through the gateway.
 */
describe('end to end: /metrics of every service after a walk-through', () => {
  let stack: Stack;
  let api: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    // enterprise: a burst of 3 and one token per 100 s, so the fourth call is a 429.
    const overrides = JSON.stringify({ enterprise: { global: { rate: 0.01, burst: 3 } } });
    stack = await startStack({ gateway: { PLAN_OVERRIDES: overrides } });
    api = apiClient(stack.gateway.url);
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
  }, 30_000);

  async function scrape(url: string, headers: Record<string, string> = {}): Promise<Samples> {
    const res = await fetch(`${url}/metrics`, { headers });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return parseMetrics(await res.text());
  }
  const scrapeGateway = () => scrape(stack.gateway.url, { authorization: `Bearer ${stack.operatorToken}` });

  it('when a tenant walks through mandates, verify, limits and events, then the counters of every service moved', async () => {
    const walkStartedAt = Date.now();
    const tenant = await createTenant(stack, { name: 'Metrics' });
    const created = await createPaymentsMandate(api, tenant.auth);
    expect(created.status).toBe(201);
    const verifyBody = { mandate_id: created.body.id, action: 'payments:create' };
    expect((await api('POST', '/v1/verify', { auth: tenant.auth, body: verifyBody })).body).toMatchObject({
      decision: 'ALLOW',
      reason: 'OK',
    });
    const suspended = await api('POST', `/v1/mandates/${created.body.id}/suspend`, {
      auth: tenant.auth,
      body: { reason: 'metrics' },
    });
    expect(suspended.status).toBe(200);
    expect((await api('POST', '/v1/verify', { auth: tenant.auth, body: verifyBody })).body).toMatchObject({
      decision: 'DENY',
      reason: 'MANDATE_SUSPENDED',
    });
    const limited = await createTenant(stack, { name: 'Metrics limited', plan: 'enterprise' });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++)
      statuses.push((await api('GET', '/v1/mandates', { auth: limited.auth })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    await eventually(
      async () => {
        const res = await api('GET', '/v1/events?type=VERIFICATION_PERFORMED', { auth: tenant.auth });
        return res.body.data.length === 2 ? true : undefined;
      },
      15_000,
      'both verifications in the audit trail',
    );

    // A message that is no audit event: each consumer that gets a copy dead-letters it.
    const topology = amqpTopology(stack.namespace);
    const connection = await amqp.connect(AMQP_URL);
    try {
      const channel = await connection.createConfirmChannel();
      await new Promise<void>((resolve, reject) =>
        channel.publish(
          topology.exchange,
          topology.routingKey('API_CALL'),
          Buffer.from('not json'),
          {},
          (err) => (err ? reject(err) : resolve()),
        ),
      );
    } finally {
      await connection.close();
    }
    await eventually(
      async () => {
        const samples = await scrape(stack.services.audit.url);
        // One per queue the message reached: the audit trail's only, since the webhook queue gets
        // just the types some endpoint subscribes to, and no endpoint here takes API_CALL.
        return total(samples, 'audit_dead_letters_total', { kind: 'message' }) === 1 ? true : undefined;
      },
      10_000,
      'the dead letter counted',
    );

    const gateway = await scrapeGateway();
    expect(
      total(gateway, 'http_requests_total', {
        service: 'gateway',
        method: 'POST',
        route: '/v1/verify',
        status: '200',
      }),
    ).toBe(2);
    expect(
      total(gateway, 'http_request_duration_seconds_count', { service: 'gateway', route: '/v1/mandates' }),
    ).toBeGreaterThanOrEqual(5);
    expect(total(gateway, 'http_requests_total', { route: '/v1/mandates', status: '429' })).toBe(1);
    expect(total(gateway, 'rate_limit_rejections_total', { bucket: 'global' })).toBe(1);
    expect(total(gateway, 'event_spool_bytes')).toBe(0);

    const verify = await scrape(stack.services.verify.url);
    expect(total(verify, 'verify_decisions_total', { decision: 'ALLOW', reason: 'OK' })).toBe(1);
    expect(total(verify, 'verify_decisions_total', { decision: 'DENY', reason: 'MANDATE_SUSPENDED' })).toBe(
      1,
    );
    expect(
      total(verify, 'http_requests_total', { service: 'verify', route: '/v1/verify', status: '200' }),
    ).toBe(2);

    const mandates = await scrape(stack.services.mandates.url);
    expect(
      total(mandates, 'http_requests_total', { service: 'mandates', method: 'POST', route: '/v1/mandates' }),
    ).toBe(1);
    expect(
      total(mandates, 'http_requests_total', { service: 'mandates', route: '/v1/mandates/:id/suspend' }),
    ).toBe(1);
    expect(mandates.some((s) => s.name === 'outbox_backlog_events')).toBe(true);
    expect(mandates.some((s) => s.name === 'outbox_oldest_event_age_seconds')).toBe(true);

    const identity = await scrape(stack.services.identity.url);
    expect(total(identity, 'http_requests_total', { service: 'identity' })).toBeGreaterThan(0);
    expect(identity.some((s) => s.name === 'outbox_backlog_events')).toBe(true);

    const audit = await scrape(stack.services.audit.url);
    expect(total(audit, 'audit_batch_size_count')).toBeGreaterThan(0);
    expect(total(audit, 'audit_batch_size_sum')).toBeGreaterThanOrEqual(2);
    // The newest stored event occurred during this test: its lag is positive, in seconds, and no
    // older than the test itself (milliseconds, or a lag never set, fail here).
    const lag = total(audit, 'audit_consumer_lag_seconds');
    expect(lag).toBeGreaterThan(0);
    expect(lag).toBeLessThanOrEqual((Date.now() - walkStartedAt) / 1000 + 1);
    expect(audit.some((s) => s.name === 'audit_consumer_lag_seconds')).toBe(true);
    expect(audit.some((s) => s.name === 'audit_queue_messages')).toBe(true);
    expect(total(audit, 'http_requests_total', { service: 'audit', route: '/v1/events' })).toBeGreaterThan(0);

    // Event-loop delay and the other process metrics, on every service.
    for (const samples of [gateway, verify, mandates, identity, audit]) {
      expect(samples.some((s) => s.name === 'nodejs_eventloop_lag_p99_seconds')).toBe(true);
      expect(samples.some((s) => s.name === 'process_resident_memory_bytes')).toBe(true);
    }
  }, 60_000);

  it('when /metrics is asked of the gateway without a credential, then the route table answers 404; with a wrong one, then 401 (a counted failed authentication); nothing is forwarded', async () => {
    for (const path of ['/metrics', '/v1/metrics', '/METRICS', '/metrics/']) {
      const res = await fetch(stack.gateway.url + path);
      expect({ path, status: res.status }).toEqual({ path, status: 404 });
      expect(await res.json()).toEqual({ error: 'NOT_FOUND', message: 'Route not found' });
    }
    const tenant = await createTenant(stack, { name: 'Metrics outsider' });
    const withKey = await api('GET', '/metrics', { auth: tenant.auth });
    expect(withKey.body).toEqual({ error: 'UNAUTHORIZED', message: 'Invalid operator credentials' });
    const wrong = await fetch(`${stack.gateway.url}/metrics`, { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
  });
});
