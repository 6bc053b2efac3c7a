/**
 * `npm run bench:webhooks` — webhook delivery throughput and latency on this machine.
 *
 * The five services as processes on the real RabbitMQ and Redis (test/support/stack.ts, their
 * own namespace; in-memory stores), one tenant with one endpoint (`["*"]`) on a receiver on
 * loopback that answers 204 at once. Events are published to the events exchange as producers
 * do (RabbitPublisher, batches of 50), in two phases:
 *
 * 1. open loop: BENCH_RATE events per second (default 500) for BENCH_SECONDS (default 20), what
 *    is due published every BENCH_TICK_MS (default 20 ms, as a producer's relay batches); the
 *    latency of each event is the receiver's arrival time of its first attempt minus the event's
 *    occurred_at (stamped when published): p50, p99, max.
 * 2. burst: BENCH_BURST events (default 10,000) published at once; deliveries per second is the
 *    count over the time from the first arrival to the last.
 *
 * Every event must arrive (the run fails otherwise); repeats are counted.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@mandate/shared/observability';
import { RabbitPublisher, amqpTopology, type AuditEvent } from '@mandate/shared/events';
import { anyEvent } from '@mandate/shared/testing';
import { AMQP_URL, apiClient, createTenant, startStack } from '../test/support/stack';

const RATE = Number(process.env.BENCH_RATE ?? 500);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const BURST = Number(process.env.BENCH_BURST ?? 10_000);
const BATCH = 50;
const TICK_MS = Number(process.env.BENCH_TICK_MS ?? 20);

const arrivals = new Map<string, number>();
let requests = 0;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

async function waitFor(check: () => boolean, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A receiver on loopback that answers 204 at once and records each event's first arrival. */
async function startReceiver(): Promise<{ url: string; close(): Promise<void> }> {
  const receiver = createServer((req, res) => {
    const id = String(req.headers['webhook-id']);
    const now = Date.now();
    req.resume();
    req.on('end', () => {
      requests++;
      if (!arrivals.has(id)) arrivals.set(id, now);
      res.statusCode = 204;
      res.end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
    close: () => new Promise<void>((resolve) => receiver.close(() => resolve())),
  };
}

type MakeEvents = (n: number) => AuditEvent[];

/** 1. Open loop at RATE per second: each event's latency to its first arrival, sorted. */
async function openLoopPhase(publisher: RabbitPublisher, makeEvents: MakeEvents): Promise<number[]> {
  const total = RATE * SECONDS;
  const openLoop: AuditEvent[] = [];
  const started = Date.now();
  for (let sent = 0; sent < total;) {
    const due = Math.min(total, Math.floor(((Date.now() - started) / 1000) * RATE));
    while (sent < due) {
      const batch = makeEvents(Math.min(BATCH, due - sent));
      openLoop.push(...batch);
      sent += batch.length;
      void publisher.publish(batch);
    }
    // Producers batch what a pass of their relay finds; one message per 20 ms tick, as they would.
    await new Promise((r) => setTimeout(r, TICK_MS));
  }
  await waitFor(() => openLoop.every((e) => arrivals.has(e.id)), 'every open-loop event', 120_000);
  return openLoop.map((e) => arrivals.get(e.id)! - Date.parse(e.occurred_at)).sort((a, b) => a - b);
}

/** 2. Burst: everything at once, then how fast it drains (s from first to last arrival). */
async function burstPhase(
  publisher: RabbitPublisher,
  makeEvents: MakeEvents,
): Promise<{ span: number; before: number }> {
  const burst = makeEvents(BURST);
  const before = requests;
  for (let i = 0; i < burst.length; i += BATCH) void publisher.publish(burst.slice(i, i + BATCH));
  await waitFor(() => burst.every((e) => arrivals.has(e.id)), 'every burst event', 300_000);
  const times = burst.map((e) => arrivals.get(e.id)!);
  return { span: (Math.max(...times) - Math.min(...times)) / 1000, before };
}

async function main(): Promise<void> {
  const receiver = await startReceiver();

  console.log('starting the five services (in-memory stores, real RabbitMQ and Redis)…');
  const stack = await startStack({ audit: { WEBHOOKS_ALLOW_LOOPBACK: 'true', LOG_LEVEL: 'warn' } });
  const publisher = new RabbitPublisher(
    AMQP_URL,
    createLogger('bench', 'silent'),
    amqpTopology(stack.namespace),
  );
  try {
    const tenant = await createTenant(stack, { name: 'Webhook bench', plan: 'enterprise' });
    const api = apiClient(stack.gateway.url);
    const created = await api('POST', '/v1/webhook-endpoints', {
      auth: tenant.auth,
      body: { url: receiver.url, event_types: ['*'] },
    });
    if (created.status !== 201) throw new Error(`endpoint: ${created.status} ${created.text}`);
    const tenantId: string = tenant.tenant.id;
    const makeEvents: MakeEvents = (n) =>
      Array.from({ length: n }, (_, i) =>
        anyEvent({
          type: 'MANDATE_CREATED',
          tenantId,
          resource: { type: 'mandate', id: `mdt_bench_${i}` },
          data: { i },
        }),
      );

    // Warm-up: connections, JIT, the first batches.
    const warm = makeEvents(200);
    await publisher.publish(warm);
    await waitFor(() => warm.every((e) => arrivals.has(e.id)), 'the warm-up events', 60_000);

    const latencies = await openLoopPhase(publisher, makeEvents);
    const { span, before } = await burstPhase(publisher, makeEvents);

    console.log('');
    console.log(`open loop: ${RATE * SECONDS} events at ${RATE}/s for ${SECONDS} s, every one delivered`);
    console.log(
      `  event → first attempt at the receiver: p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms, max ${latencies[latencies.length - 1]} ms`,
    );
    console.log(
      `burst: ${BURST} events published at once, delivered in ${span.toFixed(1)} s: ${Math.round(BURST / span)} deliveries/s (${requests - before - BURST} repeats)`,
    );
  } finally {
    await publisher.close();
    await stack.stop();
    await receiver.close();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
