/**
 * One side of `npm run bench:audit-ingest` (bench/audit-ingest.ts): a process that drains a queue
 * with one tree's audit consumer and memory store, each time the driver asks. The driver bundles
 * this module with that tree's modules (esbuild, as `npm run build` makes the images' bundles), so
 * each side runs its own code the way production runs it, with no transpiler at run time.
 */
import { readFileSync } from 'node:fs';
// Not the package's testing entry: this module is bundled with another tree's code, and that entry
// would bring this repository's metrics registrations into its process.
import type { AmqpTopology } from '../packages/shared/src/events/bus/topology';
import { TEST_AMQP_URL as AMQP_URL, deleteAmqpTopology } from '../packages/shared/src/testing/amqp';

export type Side = 'after' | 'without' | 'before' | 'compare';

export interface RunResult {
  perSecond: number;
  cpuMicrosPerEvent: number;
}

export type ToSide = { run: { namespace: string; messagesFile: string } };
export type FromSide = { ready: true } | { result: RunResult } | { error: string };

/** A tree's modules, as its bundle's entry hands them over (their types differ between versions). */
export interface TreeModules {
  events: {
    /** Named alike in every version since before the log, so this repository's type fits. */
    amqpTopology(namespace: string): AmqpTopology;
    RabbitPublisher: new (
      url: string,
      logger: unknown,
      topology: unknown,
    ) => {
      publish(events: unknown[]): Promise<void>;
      close(): Promise<void>;
    };
    RabbitEventSource: new (options: {
      url: string;
      logger: unknown;
      topology: unknown;
      prefetch: number;
    }) => unknown;
  };
  createLogger(name: string, level: string): unknown;
  MemoryEventStore: new (options?: { log?: boolean }) => {
    size: number;
    logHeads?(): Promise<{ size: number }[]>;
  };
  startAuditConsumer(
    source: unknown,
    store: unknown,
    logger: unknown,
  ): Promise<{ handled: number; stop(): Promise<void> }>;
}

const SETTLE_MS = Number(process.env.BENCH_SETTLE_MS ?? 1000);

/** Publishes the messages into the namespace's queue, then times the consumer draining it. */
async function drain(
  tree: TreeModules,
  side: Side,
  { namespace, messagesFile }: ToSide['run'],
): Promise<RunResult> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  const logger = tree.createLogger('bench', 'silent');
  const batches = JSON.parse(readFileSync(messagesFile, 'utf8')) as unknown[][];
  const topology = tree.events.amqpTopology(namespace);
  let consumer: { handled: number; stop(): Promise<void> } | undefined;
  try {
    const publisher = new tree.events.RabbitPublisher(AMQP_URL, logger, topology);
    const total = batches.reduce((n, batch) => n + batch.length, 0);
    // Ten messages in flight at a time (the first alone opens the channel): publishing is untimed,
    // and one confirm at a time made it most of the run.
    await publisher.publish(batches[0]!);
    for (let at = 1; at < batches.length; at += 10)
      await Promise.all(batches.slice(at, at + 10).map((batch) => publisher.publish(batch)));
    await publisher.close();
    // The broker writes its queue's segments behind the confirms: let that settle off the clock.
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const store =
      side === 'without' ? new tree.MemoryEventStore({ log: false }) : new tree.MemoryEventStore();
    const source = new tree.events.RabbitEventSource({ url: AMQP_URL, logger, topology, prefetch: 200 });
    gc();
    const cpu = process.cpuUsage();
    const started = performance.now();
    consumer = await tree.startAuditConsumer(source, store, logger);
    // A message the consumer refuses is dead-lettered, never handled: fail instead of waiting forever.
    while (consumer.handled < total) {
      if (performance.now() - started > 120_000)
        throw new Error(`${side}: ${consumer.handled} of ${total} events in 120 s`);
      await new Promise((r) => setTimeout(r, 1));
    }
    // The clock stops once every event is in its tenant's tree too (a store that integrated behind
    // its inserts could not look faster than it is).
    if (side === 'after' || side === 'compare') {
      const heads = (await store.logHeads!()) ?? [];
      const leaves = heads.reduce((n, head) => n + head.size, 0);
      if (leaves !== total) throw new Error(`${side}: ${leaves} leaves for ${total} events`);
    }
    const seconds = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    if (store.size !== total) throw new Error(`${side}: ${store.size} events stored of ${total}`);
    return { perSecond: total / seconds, cpuMicrosPerEvent: (used.user + used.system) / total };
  } finally {
    await consumer?.stop();
    await deleteAmqpTopology(topology, AMQP_URL);
  }
}

/** The side process's main: answers each `run` the driver sends with its result, one at a time. */
export function runSide(tree: TreeModules): void {
  const side = process.argv[2] as Side;
  const send = (message: FromSide) => process.send!(message);
  process.on('message', (message: ToSide) => {
    drain(tree, side, message.run).then(
      (result) => send({ result }),
      (err: unknown) => send({ error: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
    );
  });
  send({ ready: true });
}
