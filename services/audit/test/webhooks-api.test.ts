import { Webhook } from 'standardwebhooks';
import { newId } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { InProcessBus } from '@mandate/shared/events';
import { buildOpenApiDocument } from '@mandate/shared/contract';
import { type RunningServer } from '@mandate/shared/http';
import { anyEvent, TEST_INTERNAL_SECRET, callService, callerFor, testTokens } from '@mandate/shared/testing';
import { createApp, type AuditService } from '../src/app';
import { auditConfig } from '../src/config';
import { MAX_WEBHOOK_ENDPOINTS } from '../src/contract';
import { wire } from '../src/wiring';
import { eventually, startReceiver, type Receiver } from './webhook-receiver';

const logger = createLogger('audit-test', 'silent');

/** Public names the tests resolve themselves (no DNS): one public, one rebinding to loopback after a create. */
const PUBLIC = '93.184.215.14';
const resolved: Record<string, string[]> = {
  'hooks.example.com': [PUBLIC],
  'internal.example.com': ['127.0.0.1'],
  'private.example.com': ['10.1.2.3'],
  'rebind.example.com': [PUBLIC],
};
const lookup = async (host: string) => {
  const addresses = resolved[host];
  if (!addresses) throw new Error(`ENOTFOUND ${host}`);
  return addresses;
};

describe('webhook endpoints and delivery (audit service in process, memory store, in-process bus)', () => {
  let bus: InProcessBus;
  let service: AuditService;
  let server: RunningServer;
  let receiver: Receiver;
  let close: () => Promise<void>;

  beforeAll(async () => {
    receiver = await startReceiver();
    bus = new InProcessBus(logger);
    const config = auditConfig({
      INTERNAL_TOKEN_SECRET: TEST_INTERNAL_SECRET,
      WEBHOOKS_ALLOW_LOOPBACK: 'true',
      WEBHOOKS_TIMEOUT_MS: '1000',
      WEBHOOKS_RETRY_SCHEDULE: '0.05,0.05',
      WEBHOOKS_POLL_MS: '20',
    });
    const wired = await wire(config, logger, { source: bus, tokens: testTokens, webhookLookup: lookup });
    service = createApp(wired.deps);
    server = await service.start();
    close = wired.close;
  });
  afterAll(async () => {
    await service.stop();
    await bus.close();
    await close();
    await receiver.close();
  });

  const call = (tenant: string, method: string, path: string, body?: unknown) =>
    callService(server.url, method, path, { caller: callerFor(tenant), body });
  const create = async (tenant: string, body: Record<string, unknown>) => {
    const res = await call(tenant, 'POST', '/v1/webhook-endpoints', body);
    if (res.status !== 201) throw new Error(`create: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as { id: string; secret: string; url: string };
  };
  const hook = (path: string) => `${receiver.url}${path}`;
  const deliveriesOf = async (tenant: string, endpoint: string) =>
    (await call(tenant, 'GET', `/v1/webhook-endpoints/${endpoint}/deliveries`)).body.data as any[];
  const publish = async (tenant: string, type: 'MANDATE_CREATED' | 'MANDATE_REVOKED' = 'MANDATE_CREATED') => {
    const event = anyEvent({
      type,
      tenantId: tenant,
      resource: { type: 'mandate', id: 'mdt_x' },
      data: { n: 1 },
    });
    await bus.publish([event]);
    return event;
  };

  it('when an endpoint is created, then the answer holds a whsec_ secret once, reads never do, and WEBHOOK_ENDPOINT_CREATED is audited', async () => {
    const tenant = newId('tnt');
    const res = await call(tenant, 'POST', '/v1/webhook-endpoints', {
      url: 'https://hooks.example.com/in',
      event_types: ['MANDATE_CREATED'],
      description: 'orders',
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      id: expect.stringMatching(/^whe_/),
      url: 'https://hooks.example.com/in',
      event_types: ['MANDATE_CREATED'],
      status: 'ENABLED',
      description: 'orders',
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    const got = await call(tenant, 'GET', `/v1/webhook-endpoints/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(JSON.stringify(got.body)).not.toContain(res.body.secret.slice(6));
    const listed = await call(tenant, 'GET', '/v1/webhook-endpoints');
    expect(listed.body.data.map((e: { id: string }) => e.id)).toEqual([res.body.id]);
    expect(listed.body.data[0]).not.toHaveProperty('secret');
    const events = await eventually(async () => {
      const page = await call(tenant, 'GET', '/v1/events?type=WEBHOOK_ENDPOINT_CREATED');
      return page.body.data.length === 1 ? page.body.data : undefined;
    }, 'WEBHOOK_ENDPOINT_CREATED in the trail');
    expect(events[0]).toMatchObject({ resource: { type: 'webhook_endpoint', id: res.body.id } });
    expect(JSON.stringify(events[0])).not.toContain(res.body.secret.slice(6));
    // Another tenant sees nothing of it.
    expect((await call(newId('tnt'), 'GET', `/v1/webhook-endpoints/${res.body.id}`)).status).toBe(404);
  });

  it('when an event of a subscribed type occurs, then the receiver gets it signed per Standard Webhooks, webhook-id = event id', async () => {
    const tenant = newId('tnt');
    const endpoint = await create(tenant, { url: hook('/signed'), event_types: ['MANDATE_CREATED'] });
    const other = await publish(tenant, 'MANDATE_REVOKED');
    const event = await publish(tenant);
    const [request] = await eventually(() => {
      const got = receiver.withId(event.id);
      return got.length > 0 ? got : undefined;
    }, 'the delivery');
    expect(request!.path).toBe('/signed');
    expect(request!.headers['content-type']).toBe('application/json');
    // The headers the OpenAPI document's webhooks name are the ones sent, each as it says.
    const documented = (
      buildOpenApiDocument([]).webhooks!.MANDATE_CREATED!.post!.parameters as {
        name: string;
        schema: { pattern?: string; enum?: string[] };
      }[]
    ).map(({ name, schema }) => {
      const value = request!.headers[name];
      const fits =
        typeof value === 'string' &&
        (schema.pattern === undefined || new RegExp(schema.pattern).test(value)) &&
        (schema.enum === undefined || schema.enum.includes(value));
      return { name, fits };
    });
    expect(documented).toEqual(
      ['webhook-id', 'webhook-timestamp', 'webhook-signature', 'user-agent'].map((name) => ({
        name,
        fits: true,
      })),
    );
    const payload = new Webhook(endpoint.secret).verify(
      request!.body,
      request!.headers as Record<string, string>,
    );
    expect(payload).toEqual({ type: 'MANDATE_CREATED', timestamp: event.occurred_at, data: event });
    // A wrong secret fails, as a tampered body does.
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(
        request!.body,
        request!.headers as Record<string, string>,
      ),
    ).toThrow();
    expect(() =>
      new Webhook(endpoint.secret).verify(
        request!.body.replace('mdt_x', 'mdt_y'),
        request!.headers as Record<string, string>,
      ),
    ).toThrow();
    expect(receiver.withId(other.id)).toEqual([]);
    const deliveries = await eventually(async () => {
      const list = await deliveriesOf(tenant, endpoint.id);
      return list[0]?.status === 'SUCCEEDED' ? list : undefined;
    }, 'SUCCEEDED');
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({
      event_id: event.id,
      event_type: 'MANDATE_CREATED',
      attempts: [{ status_code: 200, error: null, response_body: 'ok', manual: false }],
    });
  });

  it('when deliveries were attempted, then /metrics counts attempts by outcome, their latency, the backlog and its oldest age', async () => {
    const tenant = newId('tnt');
    await create(tenant, { url: hook('/metered'), event_types: ['MANDATE_CREATED'] });
    const event = await publish(tenant);
    await eventually(() => receiver.withId(event.id).length > 0 || undefined, 'the delivery');
    const text = await eventually(async () => {
      const body = await (await fetch(`${server.url}/metrics`)).text();
      return /webhook_attempts_total\{outcome="succeeded"\} [1-9]/.test(body) ? body : undefined;
    }, 'the succeeded attempt counted');
    expect(text).toMatch(/webhook_attempt_duration_seconds_count [1-9]/);
    expect(text).toMatch(/webhook_backlog_deliveries \d+/);
    expect(text).toMatch(/webhook_oldest_pending_age_seconds \d/);
  });

  it('when the secret is rotated, then deliveries carry both signatures for 24 h and each secret verifies alone', async () => {
    const tenant = newId('tnt');
    const endpoint = await create(tenant, { url: hook('/rotated'), event_types: ['*'] });
    const rotated = await call(tenant, 'POST', `/v1/webhook-endpoints/${endpoint.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(endpoint.secret);
    const overlap = Date.parse(rotated.body.previous_secret_expires_at) - Date.now();
    expect(overlap).toBeGreaterThan(23.9 * 3600_000);
    expect(overlap).toBeLessThanOrEqual(24 * 3600_000);
    const event = await publish(tenant);
    const [request] = await eventually(() => {
      const got = receiver.withId(event.id);
      return got.length > 0 ? got : undefined;
    }, 'the delivery');
    const headers = request!.headers as Record<string, string>;
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    for (const secret of [endpoint.secret, rotated.body.secret])
      expect(new Webhook(secret).verify(request!.body, headers)).toMatchObject({ data: { id: event.id } });
  });

  it('when a URL breaks the address rules, then 400 naming url and nothing is created', async () => {
    const tenant = newId('tnt');
    const cases: [string, RegExp][] = [
      ['http://hooks.example.com/in', /https/],
      // One message for every refused address: it never says what a name resolved to (docs/WEBHOOKS.md).
      ['https://10.0.0.7/in', /^url must point to a public address/],
      ['https://169.254.169.254/latest', /^url must point to a public address/],
      ['https://100.64.1.1/in', /^url must point to a public address/],
      ['https://127.0.0.2/in', /^url must point to a public address/],
      ['https://0.0.0.0/in', /^url must point to a public address/],
      ['https://internal.example.com/in', /^url must point to a public address/],
      ['https://private.example.com/in', /^url must point to a public address/],
      ['https://user:pw@hooks.example.com/in', /credentials/],
      ['https://hooks.example.com/in#frag', /fragment/],
      ['ftp://hooks.example.com/in', /https/],
    ];
    for (const [url, message] of cases) {
      const res = await call(tenant, 'POST', '/v1/webhook-endpoints', { url, event_types: ['*'] });
      expect({ url, status: res.status, error: res.body.error }).toEqual({
        url,
        status: 400,
        error: 'BAD_REQUEST',
      });
      expect(Object.keys(res.body).sort()).toEqual(['error', 'message']);
      expect(res.body.message).toMatch(/url/);
      expect(res.body.message).toMatch(message);
    }
    expect((await call(tenant, 'GET', '/v1/webhook-endpoints')).body.data).toEqual([]);
  });

  it('when the body is invalid, then 400 in the envelope: unknown member, no event types, an unknown type, ["*"] with others', async () => {
    const tenant = newId('tnt');
    for (const body of [
      { url: 'https://hooks.example.com/', event_types: ['*'], extra: 1 },
      { url: 'https://hooks.example.com/', event_types: [] },
      { url: 'https://hooks.example.com/', event_types: ['NOPE'] },
      { url: 'https://hooks.example.com/', event_types: ['*', 'MANDATE_CREATED'] },
      { event_types: ['*'] },
    ]) {
      const res = await call(tenant, 'POST', '/v1/webhook-endpoints', body);
      expect(res.status).toBe(400);
      expect(Object.keys(res.body).sort()).toEqual(['error', 'message']);
    }
  });

  it(`when a tenant has ${MAX_WEBHOOK_ENDPOINTS} endpoints, then creating another is 409, concurrent creates included; deleting one frees a place`, async () => {
    const tenant = newId('tnt');
    const results = await Promise.all(
      Array.from({ length: MAX_WEBHOOK_ENDPOINTS + 3 }, () =>
        call(tenant, 'POST', '/v1/webhook-endpoints', {
          url: 'https://hooks.example.com/n',
          event_types: ['*'],
        }),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(MAX_WEBHOOK_ENDPOINTS);
    expect(statuses.filter((s) => s === 409)).toHaveLength(3);
    const first = results.find((r) => r.status === 201)!.body.id;
    expect((await call(tenant, 'DELETE', `/v1/webhook-endpoints/${first}`)).body).toEqual({
      id: first,
      deleted: true,
    });
    expect((await call(tenant, 'GET', `/v1/webhook-endpoints/${first}`)).status).toBe(404);
    expect((await call(tenant, 'DELETE', `/v1/webhook-endpoints/${first}`)).status).toBe(404);
    await create(tenant, { url: 'https://hooks.example.com/again', event_types: ['*'] });
  });

  it('when an endpoint is patched, then the change is stored and audited; disabled, it gets no new deliveries and test is 409', async () => {
    const tenant = newId('tnt');
    const endpoint = await create(tenant, { url: hook('/patched'), event_types: ['MANDATE_CREATED'] });
    const patched = await call(tenant, 'PATCH', `/v1/webhook-endpoints/${endpoint.id}`, {
      event_types: ['MANDATE_REVOKED'],
      description: 'revocations',
      status: 'DISABLED',
    });
    expect(patched.body).toMatchObject({
      event_types: ['MANDATE_REVOKED'],
      description: 'revocations',
      status: 'DISABLED',
      disabled_reason: 'manual',
    });
    expect((await call(tenant, 'PATCH', `/v1/webhook-endpoints/${endpoint.id}`, {})).status).toBe(400);
    expect(
      (await call(tenant, 'PATCH', `/v1/webhook-endpoints/${endpoint.id}`, { url: 'https://10.0.0.1/' }))
        .status,
    ).toBe(400);
    expect((await call(tenant, 'POST', `/v1/webhook-endpoints/${endpoint.id}/test`)).status).toBe(409);
    const event = await publish(tenant, 'MANDATE_REVOKED');
    await bus.drain();
    expect(await deliveriesOf(tenant, endpoint.id)).toEqual([]);
    expect(receiver.withId(event.id)).toEqual([]);
    const updates = await eventually(async () => {
      const page = await call(tenant, 'GET', '/v1/events?type=WEBHOOK_ENDPOINT_UPDATED');
      return page.body.data.length === 1 ? page.body.data : undefined;
    }, 'WEBHOOK_ENDPOINT_UPDATED');
    expect(updates[0].data).toMatchObject({
      changed: ['description', 'event_types', 'status'],
      status: 'DISABLED',
    });
  });

  it('when a test event is sent, then 201 with its first attempt made, and a manual retry adds an attempt with the same webhook-id', async () => {
    const tenant = newId('tnt');
    const endpoint = await create(tenant, { url: hook('/test'), event_types: ['MANDATE_CREATED'] });
    const sent = await call(tenant, 'POST', `/v1/webhook-endpoints/${endpoint.id}/test`);
    expect(sent.status).toBe(201);
    expect(sent.body).toMatchObject({
      event_type: 'webhook.test',
      status: 'SUCCEEDED',
      attempts: [{ status_code: 200 }],
    });
    const [request] = receiver.withId(sent.body.event_id);
    expect(
      new Webhook(endpoint.secret).verify(request!.body, request!.headers as Record<string, string>),
    ).toMatchObject({
      type: 'webhook.test',
      data: { type: 'webhook.test', tenant_id: tenant },
    });
    receiver.answerWith((_req, res) => {
      res.statusCode = 503;
      res.end('busy');
    });
    try {
      const retried = await call(
        tenant,
        'POST',
        `/v1/webhook-endpoints/${endpoint.id}/deliveries/${sent.body.id}/retry`,
      );
      expect(retried.status).toBe(200);
      expect(retried.body.attempts).toHaveLength(2);
      expect(retried.body.attempts[1]).toMatchObject({
        status_code: 503,
        error: 'HTTP 503',
        response_body: 'busy',
        manual: true,
      });
      // A failed manual retry of a delivered event leaves its status as it was.
      expect(retried.body.status).toBe('SUCCEEDED');
    } finally {
      receiver.answerWith((_req, res) => res.end('ok'));
    }
    expect(receiver.withId(sent.body.event_id)).toHaveLength(2);
    expect(
      (await call(tenant, 'POST', `/v1/webhook-endpoints/${endpoint.id}/deliveries/whd_nope/retry`)).status,
    ).toBe(404);
    expect(
      (
        await call(
          newId('tnt'),
          'POST',
          `/v1/webhook-endpoints/${endpoint.id}/deliveries/${sent.body.id}/retry`,
        )
      ).status,
    ).toBe(404);
  });

  it('when a caller may only read webhooks (tenant:read), then endpoint URLs come without their query string, in reads and in the trail; one that manages them sees them whole (docs/WEBHOOKS.md)', async () => {
    const tenant = newId('tnt');
    const url = 'https://hooks.example.com/in/path?token=capability-s3cr3t&x=1';
    const endpoint = await create(tenant, { url, event_types: ['MANDATE_CREATED'] });
    expect(endpoint.url).toBe(url);
    const viewer = (actor: 'user' | 'api_key', permissions: string[]) =>
      callerFor(tenant, { actor: { type: actor, subject_id: 'dashboard:viewer' }, permissions });
    const as = (caller: ReturnType<typeof callerFor>, path: string) =>
      callService(server.url, 'GET', path, { caller });
    for (const reader of [viewer('user', ['tenant:read', 'mandates:read', 'events:read'])]) {
      const one = await as(reader, `/v1/webhook-endpoints/${endpoint.id}`);
      expect(one.status).toBe(200);
      expect(one.body.url).toBe('https://hooks.example.com/in/path');
      const listed = await as(reader, '/v1/webhook-endpoints');
      expect(listed.body.data[0].url).toBe('https://hooks.example.com/in/path');
    }
    for (const manager of [viewer('user', ['tenant:read', 'tenant:write']), callerFor(tenant)]) {
      expect((await as(manager, `/v1/webhook-endpoints/${endpoint.id}`)).body.url).toBe(url);
      expect((await as(manager, '/v1/webhook-endpoints')).body.data[0].url).toBe(url);
    }
    const patched = await call(tenant, 'PATCH', `/v1/webhook-endpoints/${endpoint.id}`, {
      url: `${url}&y=2`,
    });
    expect(patched.body.url).toBe(`${url}&y=2`);
    const trail = await eventually(async () => {
      const page = await call(tenant, 'GET', '/v1/events?resource_id=' + endpoint.id);
      return page.body.data?.length === 2 ? page.body.data : undefined;
    }, 'both endpoint events in the trail');
    expect(JSON.stringify(trail)).not.toContain('capability-s3cr3t');
    expect(trail.map((e: { data: { url: string } }) => e.data.url)).toEqual([
      'https://hooks.example.com/in/path',
      'https://hooks.example.com/in/path',
    ]);
  });

  it('when manual retries of one delivery arrive at once, then they run one at a time: one attempt, the others 409', async () => {
    const tenant = newId('tnt');
    const endpoint = await create(tenant, { url: hook('/one-at-a-time'), event_types: ['MANDATE_CREATED'] });
    const sent = await call(tenant, 'POST', `/v1/webhook-endpoints/${endpoint.id}/test`);
    expect(sent.status).toBe(201);
    receiver.answerWith((_req, res) => void setTimeout(() => res.end('ok'), 400));
    try {
      const retry = `/v1/webhook-endpoints/${endpoint.id}/deliveries/${sent.body.id}/retry`;
      const answers = await Promise.all(Array.from({ length: 8 }, () => call(tenant, 'POST', retry)));
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses).toEqual([200, 409, 409, 409, 409, 409, 409, 409]);
      expect(answers.find((a) => a.status === 409)!.body).toEqual({
        error: 'CONFLICT',
        message: 'Webhook delivery is being attempted right now; try again shortly',
      });
      expect(receiver.withId(sent.body.event_id)).toHaveLength(2);
    } finally {
      receiver.answerWith((_req, res) => res.end('ok'));
    }
  });

  it('when a test event meets a receiver slower than the answer may wait (5 s), then 201 with the delivery PENDING, and the attempt is recorded once it ends', async () => {
    // A service whose attempts may take 8 s: longer than a manual attempt is waited for.
    const patient = await wire(
      auditConfig({
        INTERNAL_TOKEN_SECRET: TEST_INTERNAL_SECRET,
        WEBHOOKS_ALLOW_LOOPBACK: 'true',
        WEBHOOKS_TIMEOUT_MS: '8000',
        WEBHOOKS_POLL_MS: '20',
      }),
      logger,
      { source: new InProcessBus(logger), tokens: testTokens, webhookLookup: lookup },
    );
    const app = createApp(patient.deps);
    const running = await app.start();
    const held: import('node:http').ServerResponse[] = [];
    receiver.answerWith((req, res) => {
      if (req.path === '/held') held.push(res);
      else res.end('ok');
    });
    try {
      const tenant = newId('tnt');
      const at = (method: string, path: string, body?: unknown) =>
        callService(running.url, method, path, { caller: callerFor(tenant), body });
      const endpoint = (
        await at('POST', '/v1/webhook-endpoints', {
          url: hook('/held'),
          event_types: ['MANDATE_CREATED'],
        })
      ).body as { id: string };
      const sent = await at('POST', `/v1/webhook-endpoints/${endpoint.id}/test`);
      // Answered while the receiver still holds the request.
      expect(held).toHaveLength(1);
      expect(sent.status).toBe(201);
      expect(sent.body).toMatchObject({ event_type: 'webhook.test', status: 'PENDING', attempts: [] });
      held[0]!.end('late but fine');
      const recorded = await eventually(async () => {
        const [d] = (await at('GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`)).body.data;
        return d?.attempts.length === 1 ? d : undefined;
      }, 'the held attempt recorded');
      expect(recorded).toMatchObject({
        status: 'SUCCEEDED',
        attempts: [{ status_code: 200, manual: false }],
      });
    } finally {
      for (const res of held) if (!res.writableEnded) res.end();
      receiver.answerWith((_req, res) => res.end('ok'));
      await app.stop();
      await patient.close();
    }
  }, 30_000);

  it('when the receiver fails, then attempts follow the schedule to FAILED, each recorded with its error', async () => {
    const tenant = newId('tnt');
    const endpoint = await create(tenant, { url: hook('/failing'), event_types: ['MANDATE_CREATED'] });
    receiver.answerWith((req, res) => {
      res.statusCode = req.path === '/failing' ? 500 : 200;
      res.end();
    });
    try {
      const event = await publish(tenant);
      const [delivery] = await eventually(async () => {
        const list = await deliveriesOf(tenant, endpoint.id);
        return list[0]?.status === 'FAILED' ? list : undefined;
      }, 'FAILED');
      // The first attempt and one per delay of the schedule (two here).
      expect(delivery.attempts.map((a: { status_code: number }) => a.status_code)).toEqual([500, 500, 500]);
      expect(delivery.next_attempt_at).toBeNull();
      expect(receiver.withId(event.id)).toHaveLength(3);
      const ep = await call(tenant, 'GET', `/v1/webhook-endpoints/${endpoint.id}`);
      expect(ep.body.failing_since).not.toBeNull();
    } finally {
      receiver.answerWith((_req, res) => res.end('ok'));
    }
  });

  it('when the receiver redirects, answers too much or too slowly, or the name rebinds to loopback, then the attempt says so and nothing else is fetched', async () => {
    const tenant = newId('tnt');
    const redirect = await create(tenant, { url: hook('/redirect'), event_types: ['MANDATE_CREATED'] });
    const big = await create(tenant, { url: hook('/big'), event_types: ['MANDATE_CREATED'] });
    const slow = await create(tenant, { url: hook('/slow'), event_types: ['MANDATE_CREATED'] });
    const rebind = await create(tenant, {
      url: 'https://rebind.example.com/in',
      event_types: ['MANDATE_CREATED'],
    });
    resolved['rebind.example.com'] = ['127.0.0.1'];
    const pending: import('node:http').ServerResponse[] = [];
    receiver.answerWith((req, res) => {
      if (req.path === '/redirect') {
        res.writeHead(302, { location: 'http://10.0.0.1/' }).end();
      } else if (req.path === '/big') {
        res.end('x'.repeat(200_000));
      } else if (req.path === '/slow') {
        pending.push(res);
      } else res.end('ok');
    });
    try {
      await publish(tenant);
      const first = async (id: string) =>
        eventually(async () => (await deliveriesOf(tenant, id))[0]?.attempts[0], `an attempt to ${id}`);
      expect(await first(redirect.id)).toMatchObject({
        status_code: null,
        error: expect.stringMatching(/^REDIRECT/),
      });
      const bigAttempt = await first(big.id);
      expect(bigAttempt).toMatchObject({ status_code: 200, error: null });
      expect(bigAttempt.response_body).toHaveLength(1024);
      expect(await first(slow.id)).toMatchObject({
        status_code: null,
        error: expect.stringMatching(/^TIMEOUT/),
      });
      expect(await first(rebind.id)).toMatchObject({
        error: expect.stringMatching(/^ADDRESS_NOT_ALLOWED.*127\.0\.0\.1/),
      });
      expect(receiver.received.filter((r) => r.path === '/in')).toEqual([]);
    } finally {
      for (const res of pending) res.end();
      resolved['rebind.example.com'] = [PUBLIC];
      receiver.answerWith((_req, res) => res.end('ok'));
    }
  });

  /** An endpoint whose receiver answers 500 until told otherwise, with one delivery run to FAILED. */
  const failedOnce = async (tenant: string, path: string) => {
    const endpoint = await create(tenant, { url: hook(path), event_types: ['MANDATE_CREATED'] });
    const event = await publish(tenant);
    const [delivery] = await eventually(async () => {
      const list = await deliveriesOf(tenant, endpoint.id);
      return list[0]?.status === 'FAILED' ? list : undefined;
    }, 'FAILED');
    return { endpoint, event, delivery };
  };
  const failingAt = (path: string) =>
    receiver.answerWith((req, res) => {
      res.statusCode = req.path.startsWith(path) ? 500 : 200;
      res.end(req.path.startsWith(path) ? '<b>down</b>' : 'ok');
    });

  it('when the retry of a failing endpoint’s delivery succeeds, then failing_since is cleared, and the stats count the attempts of 24 h and 7 d', async () => {
    const tenant = newId('tnt');
    failingAt('/recovers');
    let delivery: { id: string; request_body: string; attempts: { response_body: string | null }[] };
    let endpoint: { id: string };
    let event: { id: string };
    try {
      ({ endpoint, event, delivery } = await failedOnce(tenant, '/recovers'));
    } finally {
      receiver.answerWith((_req, res) => res.end('ok'));
    }
    // The stored request body is what the receiver got; the answer is kept as text.
    expect(delivery.request_body).toBe(receiver.withId(event.id)[0]!.body);
    expect(delivery.attempts[0]!.response_body).toBe('<b>down</b>');
    // The request body is the event: a role that may read webhooks but not events gets the delivery without it.
    const reader = (permissions: string[]) =>
      callerFor(tenant, { actor: { type: 'user', subject_id: 'dashboard:reader' }, permissions });
    const bodyFor = async (permissions: string[]) =>
      (
        await callService(server.url, 'GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`, {
          caller: reader(permissions),
        })
      ).body.data[0].request_body;
    expect(await bodyFor(['tenant:read', 'mandates:read'])).toBeNull();
    expect(await bodyFor(['tenant:read', 'mandates:read', 'events:read'])).toBe(delivery.request_body);
    const failing = await call(tenant, 'GET', `/v1/webhook-endpoints/${endpoint.id}`);
    expect(failing.body.failing_since).not.toBeNull();
    const retried = await call(
      tenant,
      'POST',
      `/v1/webhook-endpoints/${endpoint.id}/deliveries/${delivery.id}/retry`,
    );
    expect(retried.body).toMatchObject({ status: 'SUCCEEDED', attempts: [{}, {}, {}, { status_code: 200 }] });
    const after = await call(tenant, 'GET', `/v1/webhook-endpoints/${endpoint.id}`);
    expect(after.body).toMatchObject({ status: 'ENABLED', failing_since: null });
    const stats = await call(tenant, 'GET', `/v1/webhook-endpoints/${endpoint.id}/stats`);
    expect(stats.status).toBe(200);
    const window = { attempts: 4, succeeded: 1, failed: 3, success_rate: 0.25 };
    expect(stats.body).toMatchObject({ endpoint_id: endpoint.id, last_24h: window, last_7d: window });
    expect(Date.parse(stats.body.as_of) - Date.parse(stats.body.last_7d.since)).toBe(7 * 24 * 3_600_000);
    const other = await call(newId('tnt'), 'GET', `/v1/webhook-endpoints/${endpoint.id}/stats`);
    expect(other.status).toBe(404);
    expect(Object.keys(other.body).sort()).toEqual(['error', 'message']);
    const quiet = await create(tenant, { url: hook('/quiet'), event_types: ['MANDATE_REVOKED'] });
    const none = await call(tenant, 'GET', `/v1/webhook-endpoints/${quiet.id}/stats`);
    expect(none.body.last_24h).toMatchObject({ attempts: 0, success_rate: null });
  });

  it('when failed deliveries since a time are replayed, then a dry run counts them, the replay sends each again once, and a repeat replays nothing', async () => {
    const tenant = newId('tnt');
    failingAt('/replayed');
    let endpoint: { id: string };
    let event: { id: string };
    const before = new Date(Date.now() - 1_000).toISOString();
    try {
      ({ endpoint, event } = await failedOnce(tenant, '/replayed'));
    } finally {
      receiver.answerWith((_req, res) => res.end('ok'));
    }
    const replay = `/v1/webhook-endpoints/${endpoint.id}/replay`;
    const counted = await call(tenant, 'POST', replay, { since: before, dry_run: true });
    expect(counted.body).toMatchObject({ dry_run: true, replayed: 1, has_more: false });
    expect((await deliveriesOf(tenant, endpoint.id))[0].status).toBe('FAILED');
    expect(
      (await call(tenant, 'POST', replay, { since: new Date().toISOString(), dry_run: true })).body,
    ).toMatchObject({ replayed: 0 });
    // Another tenant cannot replay, nor count, this endpoint's deliveries.
    expect((await call(newId('tnt'), 'POST', replay, { since: before })).status).toBe(404);
    const done = await call(tenant, 'POST', replay, { since: before });
    expect(done.status).toBe(200);
    expect(done.body).toEqual({
      endpoint_id: endpoint.id,
      since: before,
      dry_run: false,
      replayed: 1,
      has_more: false,
    });
    expect((await call(tenant, 'POST', replay, { since: before })).body).toMatchObject({ replayed: 0 });
    const [delivery] = await eventually(async () => {
      const list = await deliveriesOf(tenant, endpoint.id);
      return list[0]?.status === 'SUCCEEDED' ? list : undefined;
    }, 'SUCCEEDED after the replay');
    expect(delivery.attempts.at(-1)).toMatchObject({ status_code: 200 });
    expect(receiver.withId(event.id)).toHaveLength(4);
    for (const body of [
      { since: 'yesterday' },
      { since: new Date(Date.now() + 3_600_000).toISOString() },
      { since: before, extra: 1 },
      {},
    ]) {
      const res = await call(tenant, 'POST', replay, body);
      expect({ body, status: res.status, keys: Object.keys(res.body).sort() }).toEqual({
        body,
        status: 400,
        keys: ['error', 'message'],
      });
    }
    await call(tenant, 'PATCH', `/v1/webhook-endpoints/${endpoint.id}`, { status: 'DISABLED' });
    expect((await call(tenant, 'POST', replay, { since: before })).status).toBe(409);
  });
});
