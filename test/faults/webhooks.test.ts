import { randomBytes } from 'node:crypto';
import amqp from 'amqplib';
import { internalTokens, newId } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { RabbitPublisher, amqpTopology, type AuditEvent } from '@mandate/shared/events';
import { anyEvent, MONGO_TARGET, callerFor, deleteAmqpTopology } from '@mandate/shared/testing';
import { startReceiver, eventually, type Receiver } from '@mandate/audit/testing';
import { mongoStackEnv, type MongoStackEnv } from '../support/mongo-standin';
import { AMQP_URL, startService, type ServiceProcess } from '../support/stack';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';
import { WHOLE_WITHIN_MS } from './producers';

/**
 * Webhook delivery under faults: an audit process (the delivery worker) on the real RabbitMQ,
 * through a TCP proxy this test cuts, its deliveries in MongoDB (the stand-in), delivering to a
 * receiver on loopback; after a SIGKILL a new process takes over. (Two workers never leasing the
 * same delivery is the store contract's test.) Events are published to the events exchange as any producer does.
 * Schedules are shortened by configuration (retries after 0.5 s and 1 s, a 2 s attempt timeout, so
 * a lease of 7 s), so each outage lasts seconds rather than the minutes of production.
 */
const logger = createLogger('webhook-faults', 'silent');
// Seconds, not the production minutes and hours: quick retries that still outlast the 60 s
// receiver outage below (about 110 s in all), each at most 8 s after the one before.
const RETRY_SCHEDULE = '0.5,1,2,4,8,8,8,8,8,8,8,8,8,8,8,8,8';
/** The schedule's longest gap: how long a retried backlog may wait for its next attempt. */
const MAX_RETRY_GAP_MS = Math.max(...RETRY_SCHEDULE.split(',').map(Number)) * 1000;
const secret = randomBytes(32).toString('hex');
const tokens = internalTokens(secret);

describe(`webhook delivery under faults (audit processes, real RabbitMQ through a TCP proxy, ${MONGO_TARGET})`, () => {
  const namespace = `test-${newId('req')}`;
  const topology = amqpTopology(namespace);
  let databases: MongoStackEnv;
  let proxy: TcpProxy;
  let receiver: Receiver;
  let publisher: RabbitPublisher;
  let workers: ServiceProcess[] = [];
  const tenant = newId('tnt');
  let endpointId = '';
  let env: Record<string, string> = {};

  beforeAll(async () => {
    receiver = await startReceiver();
    const broker = new URL(AMQP_URL);
    proxy = await startTcpProxy(broker.hostname, Number(broker.port || 5672));
    const proxied = new URL(AMQP_URL);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(proxy.port);
    databases = mongoStackEnv('webhookfaults');
    env = {
      ...databases.env.audit,
      AMQP_URL: proxied.toString(),
      AMQP_NAMESPACE: namespace,
      INTERNAL_TOKEN_SECRET: secret,
      WEBHOOKS_ALLOW_LOOPBACK: 'true',
      WEBHOOKS_RETRY_SCHEDULE: RETRY_SCHEDULE,
      WEBHOOKS_TIMEOUT_MS: '2000',
      WEBHOOKS_POLL_MS: '200',
      LOG_LEVEL: 'warn',
    };
    workers = [await startService('audit', env, 'audit A')];
    publisher = new RabbitPublisher(AMQP_URL, logger, topology);
    const res = await call(workers[0]!, 'POST', '/v1/webhook-endpoints', {
      url: `${receiver.url}/hook`,
      event_types: ['MANDATE_CREATED'],
    });
    if (res.status !== 201) throw new Error(`create endpoint: ${res.status} ${JSON.stringify(res.body)}`);
    endpointId = res.body.id;
  }, 120_000);

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop('SIGTERM', 5_000)));
    await publisher?.close();
    await proxy?.close();
    await receiver?.close();
    await deleteAmqpTopology(topology);
    await databases?.drop();
  }, 30_000);

  async function call(worker: ServiceProcess, method: string, path: string, body?: unknown) {
    const res = await fetch(`${worker.url}${path}`, {
      method,
      headers: {
        'x-internal-token': await tokens.mint(callerFor(tenant), 'audit'),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  }

  async function publish(count: number): Promise<AuditEvent[]> {
    const events = Array.from({ length: count }, (_, i) =>
      anyEvent({
        type: 'MANDATE_CREATED',
        tenantId: tenant,
        resource: { type: 'mandate', id: `mdt_${i}` },
        data: { i },
      }),
    );
    await publisher.publish(events);
    return events;
  }

  /** Every event reached the receiver; each request's webhook-id is its event's id (its body says which). */
  async function expectAllReceived(events: AuditEvent[], what: string, timeoutMs = 40_000) {
    await eventually(() => events.every((e) => receiver.withId(e.id).length > 0), what, timeoutMs);
    for (const e of events) {
      for (const request of receiver.withId(e.id)) expect(JSON.parse(request.body).data.id).toBe(e.id);
    }
    const ids = new Set(events.map((e) => e.id));
    const requests = receiver.received.filter((r) => ids.has(String(r.headers['webhook-id'])));
    return { events: events.length, requests: requests.length, duplicates: requests.length - events.length };
  }

  /** The endpoint's deliveries of `events`, as the API lists them. */
  async function deliveriesOfEvents(events: AuditEvent[]) {
    const page = await call(workers[0]!, 'GET', `/v1/webhook-endpoints/${endpointId}/deliveries?limit=100`);
    return (page.body.data as { event_id: string; status: string; attempts: unknown[] }[]).filter((d) =>
      events.some((e) => e.id === d.event_id),
    );
  }

  /**
   * Whole again (docs/TESTING.md, "Fault matrix"): the backlog `events` all received, and a fresh
   * event published at `since` (the fault's end) received too; answers both in ms from `since`.
   * The backlog's retries keep their schedule (at most 8 s apart here), so it is held to that gap
   * on top of the 10 s bound; the fresh event, which has no schedule to wait for, to the bound alone.
   */
  async function expectWholeSince(since: number, events: AuditEvent[], what: string) {
    const [fresh] = await publish(1);
    let freshMs = 0;
    let backlogMs = 0;
    await Promise.all([
      eventually(() => receiver.withId(fresh!.id).length > 0, `${what}: a fresh event`, 60_000).then(
        () => (freshMs = Date.now() - since),
      ),
      eventually(
        () => events.every((e) => receiver.withId(e.id).length > 0),
        `${what}: the backlog`,
        60_000,
      ).then(() => (backlogMs = Date.now() - since)),
    ]);
    expect(freshMs).toBeLessThanOrEqual(WHOLE_WITHIN_MS);
    expect(backlogMs).toBeLessThanOrEqual(MAX_RETRY_GAP_MS + WHOLE_WITHIN_MS);
    return { fresh_ms_after_end: freshMs, backlog_ms_after_end: backlogMs };
  }

  /** Waits out the rest of an outage that began at `since`: its length is the scenario, not a guess at timing. */
  const outageUntil = (since: number, ms: number) =>
    new Promise((r) => setTimeout(r, Math.max(0, since + ms - Date.now())));

  it('when the receiver is down for 60 s while events occur and comes back, then every event is delivered after it returns', async () => {
    await receiver.down();
    const downSince = Date.now();
    let events: AuditEvent[] = [];
    try {
      events = await publish(20);
      // Each has failed at least once (the deliveries are stored and retrying) before the receiver returns.
      await eventually(
        async () => {
          const ours = await deliveriesOfEvents(events);
          return ours.length === events.length && ours.every((d) => d.attempts.length >= 1);
        },
        'a failed attempt of every delivery',
        30_000,
      );
      await outageUntil(downSince, 60_000);
    } finally {
      await receiver.up();
    }
    const whole = await expectWholeSince(Date.now(), events, 'after the receiver returned');
    const counts = await expectAllReceived(events, 'every event after the receiver returned');
    console.log('receiver down 60 s then back', { ...counts, ...whole });
  }, 150_000);

  it('when RabbitMQ is cut away from the workers for 10 s, then the events wait in the webhook queue and are all delivered after it returns', async () => {
    proxy.cut();
    const cutSince = Date.now();
    let events: AuditEvent[] = [];
    try {
      events = await publish(20);
      // Published straight to the broker (one message holds a batch): it waits in the webhook queue while the workers are cut off.
      await eventually(async () => (await webhookQueueDepth()) >= 1, 'the events queued', 20_000);
      await outageUntil(cutSince, 10_000);
      expect(events.filter((e) => receiver.withId(e.id).length > 0)).toEqual([]);
    } finally {
      proxy.restore();
    }
    const whole = await expectWholeSince(Date.now(), events, 'after RabbitMQ returned');
    const counts = await expectAllReceived(events, 'every event after RabbitMQ returned');
    console.log('RabbitMQ cut 10 s', { ...counts, ...whole });
  }, 90_000);

  it('when a worker is killed with SIGKILL mid-batch, then no event is lost and repeats carry the same webhook-id', async () => {
    const killed = workers[0]!;
    // The receiver holds its answers, so the batch is in flight when the worker dies.
    const held: import('node:http').ServerResponse[] = [];
    receiver.answerWith((_req, res) => held.push(res));
    let events: AuditEvent[] = [];
    try {
      events = await publish(30);
      await eventually(() => held.length >= 10, 'attempts in flight', 20_000);
      killed.child.kill('SIGKILL');
      await killed.exited;
    } finally {
      // Answered after the worker died: it never recorded them, so they are sent again.
      receiver.answerWith((_req, res) => res.end('ok'));
      for (const res of held) res.end('ok');
    }
    const heldIds = new Set(receiver.received.map((r) => String(r.headers['webhook-id'])));
    // A new process takes over the dead worker's leases once they run out (attempt timeout + 5 s).
    workers = [await startService('audit', env, 'audit C')];
    const whole = await expectWholeSince(Date.now(), events, 'after the new worker started');
    // The dead worker's attempts were never recorded: they end only when the new process has sent them again.
    await eventually(
      async () => {
        const ours = await deliveriesOfEvents(events);
        return ours.length === events.length && ours.every((d) => d.status === 'SUCCEEDED');
      },
      'every delivery SUCCEEDED',
      30_000,
    );
    const counts = await expectAllReceived(events, 'every event');
    console.log('worker SIGKILL mid-batch', { ...counts, ...whole });
    expect(counts.duplicates).toBeGreaterThan(0);
    // Every repeat is of an event the dead worker had in flight, under the same webhook-id.
    const repeated = events.filter((e) => receiver.withId(e.id).length > 1).map((e) => e.id);
    expect(repeated.filter((id) => !heldIds.has(id))).toEqual([]);
  }, 60_000);

  // The webhook queue is bound to the types endpoints subscribe to (docs/DECISIONS.md, "The webhook
  // queue gets the subscribed types"): the worker bound MANDATE_CREATED when it connected, so a type
  // added later reaches the queue only if the change bound it before answering.
  it('when an endpoint adds a type, then that type’s events published after the answer reach the webhook queue and are delivered', async () => {
    const res = await call(workers[0]!, 'PATCH', `/v1/webhook-endpoints/${endpointId}`, {
      event_types: ['MANDATE_CREATED', 'MANDATE_REVOKED'],
    });
    expect(res.status).toBe(200);
    const revoked = anyEvent({
      type: 'MANDATE_REVOKED',
      tenantId: tenant,
      resource: { type: 'mandate', id: 'mdt_revoked' },
      data: { previous_state: 'ACTIVE', state: 'REVOKED', version: 2 },
    });
    await publisher.publish([revoked]);
    await expectAllReceived([revoked], 'the MANDATE_REVOKED event', 20_000);
  }, 40_000);

  async function webhookQueueDepth(): Promise<number> {
    const connection = await amqp.connect(AMQP_URL);
    try {
      const ch = await connection.createChannel();
      return (await ch.checkQueue(topology.webhookQueue)).messageCount;
    } finally {
      await connection.close();
    }
  }
});
