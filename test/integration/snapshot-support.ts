import { Redis } from 'ioredis';
import {
  BatchingPublisher,
  RabbitPublisher,
  amqpTopology,
  createLogger,
  newId,
  systemClock,
  type AuditEvent,
  type EventPublisher,
  type Logger,
} from '@mandate/shared';
import { deleteAmqpTopology, testSnapshotMac, testTokens } from '@mandate/shared/testing';
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
  redis: Redis;
  store: CountingStore;
  signs: { count: number };
  mandatesUrl: string;
  mandatesDeps: MandatesDeps;
  verifies: { url: string; metrics: VerifyMetrics; app: VerifyApp }[];
  events: AuditEvent[];
  close(): Promise<void>;
}

/**
 * The mandates service (memory store, snapshots in the real Redis under a test prefix) and
 * `replicas` verify apps reading those snapshots, each in process on port 0. With `amqp`, verify
 * publishes through the batching publisher to the real RabbitMQ in its own namespace.
 */
export async function startSnapshotWorld(
  options: { replicas?: number; amqp?: boolean } = {},
): Promise<SnapshotWorld> {
  const prefix = `test:${newId('req')}:`;
  const redis = new Redis(REDIS_URL);
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
      new RedisSnapshotSource(new Redis(REDIS_URL, { enableAutoPipelining: true }), prefix, true),
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
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length) await redis.del(...keys);
      await redis.quit();
    },
  };
}

const deleteTopology = (namespace: string) => deleteAmqpTopology(amqpTopology(namespace), AMQP_URL);
