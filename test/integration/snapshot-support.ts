import { Redis } from 'ioredis';
import { newId, systemClock } from '@mandate/shared/core';
import { createLogger, type Logger } from '@mandate/shared/observability';
import {
  BatchingPublisher,
  RabbitPublisher,
  amqpTopology,
  type AuditEvent,
  type EventPublisher,
} from '@mandate/shared/events';
import { type RedisClient } from '@mandate/shared/data';
import {
  callService,
  callerFor,
  deleteAmqpTopology,
  testSnapshotMac,
  testTokens,
} from '@mandate/shared/testing';
// The mandates service is the only writer of snapshots: these tests run its real app next to verify's.
import {
  createApp as createMandatesApp,
  type Deps as MandatesDeps,
  LocalSigner,
  RedisSnapshots,
  MemoryMandateStore,
} from '@mandate/mandates/testing';
import {
  createApp,
  type VerifyApp,
  CountingPublisher,
  HttpMandateReader,
  SnapshotMandateReader,
  RedisSnapshotSource,
  VerifyMetrics,
} from '@mandate/verify/testing';

import { eventually } from '../support/eventually';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
export const silent: Logger = createLogger('test', 'silent');

/** Counts the store reads and signatures of the mandates service: the work verify must not cause. */
export class CountingStore extends MemoryMandateStore {
  gets = 0;
  override async get(tenantId: string, id: string) {
    this.gets++;
    return super.get(tenantId, id);
  }
}

export interface SnapshotWorld {
  prefix: string;
  redis: RedisClient;
  store: CountingStore;
  signs: { count: number };
  mandatesUrl: string;
  mandatesDeps: MandatesDeps;
  verifies: { url: string; metrics: VerifyMetrics; app: VerifyApp }[];
  events: AuditEvent[];
  close(): Promise<void>;
}

/** Where a world's snapshots live when not in the shared Redis (a Redis Cluster). */
export interface WorldRedis {
  /** A new client; `autoPipelining` for verify's, as RedisSnapshotSource.connect sets it. */
  client(autoPipelining: boolean): RedisClient;
  deleteKeys(pattern: string): Promise<void>;
}

/**
 * The mandates service (memory store, snapshots in the real Redis under a test prefix) and
 * `replicas` verify apps reading those snapshots, each in process on port 0. With `amqp`, verify
 * publishes through the batching publisher to the real RabbitMQ in its own namespace. With
 * `redis`, the snapshots live there instead.
 */
export async function startSnapshotWorld(
  options: { replicas?: number; amqp?: boolean; redis?: WorldRedis } = {},
): Promise<SnapshotWorld> {
  const prefix = `test:${newId('req')}:`;
  const client = (autoPipelining: boolean): RedisClient =>
    options.redis?.client(autoPipelining) ?? new Redis(REDIS_URL, { enableAutoPipelining: autoPipelining });
  const redis = client(false);
  const store = new CountingStore();
  const signer = await LocalSigner.create();
  const signs = { count: 0 };
  const countingSigner = Object.assign(Object.create(signer), {
    sign: (payload: string) => {
      signs.count++;
      return signer.sign(payload);
    },
  }) as typeof signer;
  const events: AuditEvent[] = [];
  const capture: EventPublisher = {
    kind: 'in-process',
    publish: async (e) => void events.push(...e),
    close: async () => {},
  };
  const mandatesDeps: MandatesDeps = {
    store,
    publisher: capture,
    signer: countingSigner,
    tokens: testTokens,
    logger: silent,
    clock: systemClock,
    snapshots: RedisSnapshots.over(redis, { prefix, mac: testSnapshotMac }),
  };
  const mandates = createMandatesApp(mandatesDeps);
  const mandatesServer = await mandates.start();

  const namespace = `test-${newId('req')}`;
  const closers: (() => Promise<void>)[] = [];
  const verifies: SnapshotWorld['verifies'] = [];
  for (let i = 0; i < (options.replicas ?? 1); i++) {
    const metrics = new VerifyMetrics();
    const http = new HttpMandateReader({ baseUrls: [mandatesServer.url], logger: silent, metrics });
    const reader = new SnapshotMandateReader(
      new RedisSnapshotSource(client(true), prefix, true),
      http,
      metrics,
      silent,
      testSnapshotMac,
    );
    let publisher: EventPublisher = capture;
    if (options.amqp) {
      const rabbit = new RabbitPublisher(AMQP_URL, silent, amqpTopology(namespace));
      await rabbit.connect();
      publisher = new BatchingPublisher(new CountingPublisher(rabbit, () => metrics.brokerPublishes++), {
        maxBatch: 500,
        maxDelayMs: 5,
      });
    }
    const app = createApp({
      reader,
      publisher,
      tokens: testTokens,
      logger: silent,
      clock: systemClock,
      metrics,
    });
    const server = await app.start();
    verifies.push({ url: server.url, metrics, app });
    closers.push(async () => {
      await app.stop();
      await reader.close();
      if (publisher !== capture) await publisher.close();
    });
  }

  return {
    prefix,
    redis,
    store,
    signs,
    mandatesUrl: mandatesServer.url,
    mandatesDeps,
    verifies,
    events,
    async close() {
      for (const close of closers) await close();
      await mandates.stop();
      if (options.amqp) await deleteTopology(namespace);
      if (options.redis) await options.redis.deleteKeys(`${prefix}*`);
      else {
        const keys = await redis.keys(`${prefix}*`);
        if (keys.length) await redis.del(...keys);
      }
      await redis.quit();
    },
  };
}

const deleteTopology = (namespace: string) => deleteAmqpTopology(amqpTopology(namespace), AMQP_URL);

interface Seen {
  /** performance.now() when the verify was sent, or when the lifecycle call returned. */
  at: number;
  version: number;
  decision?: string;
}

/**
 * Issue 5 §1, on `world` (the shared Redis, or a Redis Cluster): once suspend, revoke or
 * reactivate has returned, no verify on any replica answers from an older version. Many verifies in
 * flight on the verify replicas while lifecycle calls run; every verify sent after a lifecycle
 * response must carry that version or a newer one, and none after the revoke is an ALLOW.
 */
export async function expectNoStaleDecision(world: SnapshotWorld): Promise<void> {
  const tenantId = newId('tnt');
  const caller = callerFor(tenantId);
  const created = await callService(world.mandatesUrl, 'POST', '/v1/mandates', {
    caller,
    body: { principal: 'user_alice', delegate: 'agent_bob', scope: { actions: ['payments:*'] } },
  });
  expect(created.status).toBe(201);
  const mandateId: string = created.body.id;

  const lifecycle: Seen[] = [];
  const verifies: Seen[] = [];
  let done = false;
  let sent = 0;
  // One token for all calls and few workers: the less the client queues, the narrower a stale window it can see.
  const token = await testTokens.mint(caller, 'verify');
  const body = JSON.stringify({ mandate_id: mandateId, action: 'payments:create' });
  const worker = async (w: number) => {
    while (!done) {
      const target = world.verifies[(sent++ + w) % world.verifies.length]!;
      const at = performance.now();
      const res = await fetch(`${target.url}/v1/verify`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-internal-token': token },
        body,
      });
      expect(res.status).toBe(200);
      const answer = (await res.json()) as { mandate_version: number; decision: string };
      verifies.push({ at, version: answer.mandate_version, decision: answer.decision });
    }
  };
  const workers = Array.from({ length: 8 }, (_, w) => worker(w));

  const lifecycleCall = async (op: string) => {
    const res = await callService(world.mandatesUrl, 'POST', `/v1/mandates/${mandateId}/${op}`, { caller });
    expect(res.status).toBe(200);
    lifecycle.push({ at: performance.now(), version: res.body.version });
  };
  for (let i = 0; i < 20; i++) {
    await lifecycleCall(i % 2 === 0 ? 'suspend' : 'reactivate');
    // Pacing, not waiting: verifies run between one lifecycle change and the next.
    await new Promise((r) => setTimeout(r, 10));
  }
  await lifecycleCall('revoke');
  const revokedAt = lifecycle[lifecycle.length - 1]!.at;
  // Keep verifying for a while after the revoke.
  await eventually(
    () => (verifies.filter((v) => v.at > revokedAt).length >= 200 ? true : undefined),
    30_000,
    '200 verifies after the revoke',
    5,
  );
  done = true;
  await Promise.all(workers);

  const stale = verifies.filter((v) => {
    const newestReturned = lifecycle
      .filter((l) => l.at < v.at)
      .reduce((max, l) => Math.max(max, l.version), 1);
    return v.version < newestReturned;
  });
  const staleAllow = verifies.filter((v) => v.at > revokedAt && v.decision === 'ALLOW');
  expect({ stale: stale.length, staleAllow: staleAllow.length }).toEqual({ stale: 0, staleAllow: 0 });
  // The test only means something if verifies really ran between the lifecycle calls.
  expect(lifecycle.map((l) => l.version)).toEqual(Array.from({ length: 21 }, (_, i) => i + 2));
  expect(verifies.length).toBeGreaterThan(200);
  expect(new Set(verifies.map((v) => v.version)).size).toBeGreaterThan(5);
  expect(world.verifies.every((v) => v.metrics.verifications > 0)).toBe(true);
}
