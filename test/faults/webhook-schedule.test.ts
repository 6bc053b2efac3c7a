import { fixedClock, newId } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { InProcessBus } from '@mandate/shared/events';
import { type RunningServer } from '@mandate/shared/http';
import { anyEvent, TEST_INTERNAL_SECRET, callService, callerFor, testTokens } from '@mandate/shared/testing';
import {
  createApp,
  type AuditService,
  auditConfig,
  DEFAULT_RETRY_SCHEDULE_SECONDS,
  RETRY_JITTER,
  nextAttemptAt,
  wire,
  eventually,
  startReceiver,
  type Receiver,
} from '@mandate/audit/testing';

/**
 * The retry schedule and the disabling of a failing endpoint, under an injected clock: the audit
 * service in process with the production schedule and the 5-day limit, days passing in
 * milliseconds. The receiver always answers 500.
 */
const logger = createLogger('webhook-schedule', 'silent');
const HOUR = 3600_000;

describe('webhook retry schedule and endpoint disabling (injected clock, receiver answering 500)', () => {
  // A day ago, so every event published now occurred after the endpoint was created.
  const clock = fixedClock(new Date(Date.now() - 24 * HOUR));
  let bus: InProcessBus;
  let service: AuditService;
  let server: RunningServer;
  let receiver: Receiver;
  let close: () => Promise<void>;

  beforeAll(async () => {
    receiver = await startReceiver();
    receiver.answerWith((_req, res) => {
      res.statusCode = 500;
      res.end('down for maintenance');
    });
    bus = new InProcessBus(logger);
    const config = auditConfig({
      INTERNAL_TOKEN_SECRET: TEST_INTERNAL_SECRET,
      WEBHOOKS_ALLOW_LOOPBACK: 'true',
      WEBHOOKS_TIMEOUT_MS: '2000',
      // The worker's own poll stays out of the way: the test says when time passes.
      WEBHOOKS_POLL_MS: '60000',
    });
    // No jitter here (0.5 → the nominal delay); the jitter's bounds have their own test below.
    const wired = await wire(config, logger, {
      source: bus,
      tokens: testTokens,
      clock,
      webhookRandom: () => 0.5,
    });
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

  const tenant = newId('tnt');
  const call = (method: string, path: string, body?: unknown) =>
    callService(server.url, method, path, { caller: callerFor(tenant), body });
  const publish = async () => {
    const event = anyEvent({
      type: 'MANDATE_REVOKED',
      tenantId: tenant,
      resource: { type: 'mandate', id: 'mdt_1' },
      data: {},
    });
    await bus.publish([event]);
    await bus.drain();
    return event;
  };
  const deliveryOf = async (endpointId: string, eventId: string) => {
    const page = await call('GET', `/v1/webhook-endpoints/${endpointId}/deliveries?limit=100`);
    return page.body.data.find((d: { event_id: string }) => d.event_id === eventId);
  };

  it('when every attempt fails, then they follow 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h to FAILED; after 5 days of failures the endpoint is DISABLED with an event', async () => {
    const created = await call('POST', '/v1/webhook-endpoints', {
      url: `${receiver.url}/hook`,
      event_types: ['MANDATE_REVOKED'],
    });
    expect(created.status).toBe(201);
    const endpointId: string = created.body.id;
    const start = clock.now().getTime();
    const event = await publish();

    /** Moves the clock by `ms`, runs what is due, and answers how many attempts the delivery has. */
    const attemptsAfterRunAt = async (ms: number) => {
      clock.advance(ms);
      await service.webhookWorker!.runDue();
      return (await deliveryOf(endpointId, event.id)).attempts.length;
    };
    // The first attempt at once, then one per delay, each when (and not before) it is due.
    let attempts = 0;
    for (const delay of [0, ...DEFAULT_RETRY_SCHEDULE_SECONDS]) {
      // A millisecond before it is due, a run attempts nothing more.
      const attemptsJustBefore = delay > 0 ? await attemptsAfterRunAt(delay * 1000 - 1) : attempts;
      expect(attemptsJustBefore).toBe(attempts);
      clock.advance(delay > 0 ? 1 : 0);
      await service.webhookWorker!.runDue();
      attempts++;
      const delivery = await eventually(async () => {
        const d = await deliveryOf(endpointId, event.id);
        return d?.attempts.length === attempts ? d : undefined;
      }, `attempt ${attempts}`);
      const last = delivery.attempts[attempts - 1];
      expect(last).toMatchObject({
        status_code: 500,
        error: 'HTTP 500',
        response_body: 'down for maintenance',
      });
      expect(Date.parse(last.attempted_at)).toBe(clock.now().getTime());
      // After the last delay of the schedule the delivery has FAILED; before, the next attempt is due one delay on.
      const next = DEFAULT_RETRY_SCHEDULE_SECONDS[attempts - 1];
      expect({
        status: delivery.status,
        nextInMs:
          delivery.next_attempt_at === null
            ? null
            : Date.parse(delivery.next_attempt_at) - clock.now().getTime(),
      }).toEqual(
        next === undefined
          ? { status: 'FAILED', nextInMs: null }
          : { status: 'PENDING', nextInMs: next * 1000 },
      );
    }
    expect(receiver.withId(event.id)).toHaveLength(8);
    const failing = (await call('GET', `/v1/webhook-endpoints/${endpointId}`)).body;
    expect(failing).toMatchObject({ status: 'ENABLED', failing_since: new Date(start).toISOString() });

    // Nothing more is attempted for a FAILED delivery, however long we wait.
    clock.advance(24 * HOUR);
    await service.webhookWorker!.runDue();
    expect(receiver.withId(event.id)).toHaveLength(8);

    // Just short of 5 days of failures: a new event's failure leaves the endpoint enabled.
    clock.set(new Date(start + 120 * HOUR - 1000));
    const almost = await publish();
    await service.webhookWorker!.runDue();
    await eventually(
      async () => (await deliveryOf(endpointId, almost.id))?.attempts.length === 1,
      'an attempt',
    );
    expect((await call('GET', `/v1/webhook-endpoints/${endpointId}`)).body.status).toBe('ENABLED');

    // Five days: the next failure disables it, and says so in the trail.
    clock.set(new Date(start + 120 * HOUR));
    const last = await publish();
    await service.webhookWorker!.runDue();
    const disabled = await eventually(async () => {
      const ep = (await call('GET', `/v1/webhook-endpoints/${endpointId}`)).body;
      return ep.status === 'DISABLED' ? ep : undefined;
    }, 'the endpoint disabled');
    expect(disabled).toMatchObject({ disabled_reason: 'failing' });
    expect((await deliveryOf(endpointId, last.id)).attempts).toHaveLength(1);
    const trail = await eventually(async () => {
      const page = await call('GET', '/v1/events?type=WEBHOOK_ENDPOINT_DISABLED');
      return page.body.data.length === 1 ? page.body.data : undefined;
    }, 'WEBHOOK_ENDPOINT_DISABLED');
    expect(trail[0]).toMatchObject({
      actor: { type: 'system' },
      resource: { type: 'webhook_endpoint', id: endpointId },
      data: { reason: 'failing', failing_since: new Date(start).toISOString() },
    });

    // Disabled: the pending retry is not sent, and new events make no delivery.
    clock.advance(HOUR);
    await service.webhookWorker!.runDue();
    const skipped = await deliveryOf(endpointId, almost.id);
    expect(skipped).toMatchObject({ status: 'FAILED' });
    expect(skipped.attempts[1]).toMatchObject({ error: 'ENDPOINT_DISABLED', status_code: null });
    expect(receiver.withId(almost.id)).toHaveLength(1);
    const after = await publish();
    expect(await deliveryOf(endpointId, after.id)).toBeUndefined();

    // Enabled again by a person: its failing history starts over.
    const enabled = await call('PATCH', `/v1/webhook-endpoints/${endpointId}`, { status: 'ENABLED' });
    expect(enabled.body).toMatchObject({ status: 'ENABLED', disabled_reason: null, failing_since: null });
  });

  it('when the jitter source ranges over [0, 1), then every delay stays within ±20 % of the schedule', () => {
    const now = new Date('2026-11-20T00:00:00.000Z');
    for (const [i, base] of DEFAULT_RETRY_SCHEDULE_SECONDS.entries()) {
      for (const r of [0, 0.25, 0.5, 0.999999]) {
        const delay =
          nextAttemptAt(now, i + 1, DEFAULT_RETRY_SCHEDULE_SECONDS, () => r)!.getTime() - now.getTime();
        expect(delay).toBeGreaterThanOrEqual(base * 1000 * (1 - RETRY_JITTER));
        expect(delay).toBeLessThanOrEqual(base * 1000 * (1 + RETRY_JITTER));
      }
    }
    expect(
      nextAttemptAt(now, DEFAULT_RETRY_SCHEDULE_SECONDS.length + 1, DEFAULT_RETRY_SCHEDULE_SECONDS),
    ).toBeNull();
  });
});
