/**
 * `npm run bench:audit-log` — what the tamper-evident log (docs/API.md#proving-the-log) costs, in
 * one process, each comparison interleaved round by round so that both sides see the same machine:
 *
 * 1. Ingest: BENCH_INGEST_EVENTS (default 20,000) events, in messages of 100 as producers publish
 *    them, stored with the log (seq, leaf hash, tree append) and without it (the store as it was
 *    before: `new MemoryEventStore({ log: false })`), BENCH_ROUNDS rounds (default 5), alternating
 *    which goes first; the ratio is events/s with ÷ without, the clock stopping once every event
 *    is in its tenant's tree. Three paths: `broker`, audit's ingest as it runs (the messages wait
 *    in a queue on the real RabbitMQ, the audit consumer drains them); `consumer`, the consumer's
 *    work per message without the broker; `store`, the store's insertMany alone in batches of 200.
 * 2. Proofs at BENCH_LEAVES leaves (default 1,000,000) in one tenant: the memory store's tree is
 *    filled with leaf hashes directly (what insert appends; a million events held in memory would
 *    cost ~700 MiB and prove nothing more), and BENCH_EXPORT_EVENTS real events (default 12,000)
 *    about one mandate are stored through insert, spread evenly over the million. Then
 *    BENCH_PROOFS (default 500) inclusion proofs of those events against the signed checkpoint of
 *    the whole tree, and consistency proofs from four earlier checkpoints to it, each through the
 *    routes' own functions (domain/log.ts: the event read, the checkpoint check, the hashes), ms
 *    per proof; every proof is verified once (RFC 9162 §2.1.3.2, §2.1.4.2).
 * 3. Export: the mandate's bundle (BENCH_EXPORT_EVENTS events) in that tenant, with proofs (the
 *    checkpoint and the log proof of its events) and without (no checkpoint), BENCH_ROUNDS rounds
 *    each, alternating: wall time, CPU time (process.cpuUsage around each export) and bytes; the
 *    bundle with proofs is checked once with the offline checker.
 *
 * BENCH_PARTS (a comma list of ingest, proofs, export; default all) runs only some parts; the tree
 * is filled whatever it says.
 *
 * Run with --expose-gc (the npm script does): a collection before each timed part.
 */
import { CompactSign, calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose';
import { canonicalJson, newId } from '@mandate/shared/core';
import {
  AUDIT_CHECKPOINT_TYP,
  MemoryMerkleTree,
  fromBase64Url,
  merkleHasher,
  toBase64Url,
  type CheckpointClaims,
} from '@mandate/shared/mandate';
import { parseEventMessage, type AuditEvent } from '@mandate/shared/events';
import {
  MemoryEventStore,
  checkpointNow,
  consistencyProof,
  exportEvidence,
  inclusionProof,
  recordEvents,
  startAuditConsumer,
  type EvidenceMandate,
  type MandatesSource,
} from '@mandate/audit/testing';
import { createLogger } from '@mandate/shared/observability';
import { RabbitEventSource, RabbitPublisher, amqpTopology } from '@mandate/shared/events';
import { TEST_AMQP_URL, deleteAmqpTopology } from '@mandate/shared/testing';
import { verifyBundleText } from '../packages/evidence-cli/src/verify';
import { verification } from './audit-events';

const INGEST_EVENTS = Number(process.env.BENCH_INGEST_EVENTS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const LEAVES = Number(process.env.BENCH_LEAVES ?? 1_000_000);
const EXPORT_EVENTS = Number(process.env.BENCH_EXPORT_EVENTS ?? 12_000);
const PROOFS = Number(process.env.BENCH_PROOFS ?? 500);
const BATCH = 200;
/** Which parts run: BENCH_PARTS, a comma list of ingest, proofs, export (default all three). */
const PARTS = new Set((process.env.BENCH_PARTS ?? 'ingest,proofs,export').split(','));

const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
const out = (line: string) => process.stdout.write(`${line}\n`);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const quantile = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))]!;
const ms = (x: number) => (x < 1 ? x.toFixed(3) : x.toFixed(2));

/**
 * One side of the ingest: `consumer` is the audit consumer's work per message (a JSON array of
 * 100 events, as producers publish them: parsed, each event validated, then recordEvents), the
 * broker aside; `store` is the store's insertMany alone, in batches of 200, on events already parsed.
 */
async function ingestOnce(messages: Buffer[], log: boolean, path: 'consumer' | 'store'): Promise<number> {
  const store = new MemoryEventStore({ log });
  const parsed = path === 'store' ? messages.map((m) => JSON.parse(m.toString('utf8')) as AuditEvent[]) : [];
  let count = 0;
  gc();
  const started = performance.now();
  if (path === 'consumer') {
    for (const message of messages) {
      const events = parseEventMessage(message)!.events;
      await recordEvents(store, events);
      count += events.length;
    }
  } else {
    const events = parsed.flat();
    for (let at = 0; at < events.length; at += BATCH) await store.insertMany(events.slice(at, at + BATCH));
    count = events.length;
  }
  await integrated(store, log, count);
  return count / ((performance.now() - started) / 1000);
}

/**
 * The clock stops once every event is in its tenant's tree too (a read of the heads waits for
 * that), so a store whose trees caught up behind its inserts could not look faster than it is.
 */
async function integrated(store: MemoryEventStore, log: boolean, events: number): Promise<void> {
  const size = (await store.logHeads()).reduce((n, head) => n + head.size, 0);
  if (size !== (log ? events : 0)) throw new Error(`${size} leaves in the trees for ${events} events`);
}

async function ingest(): Promise<void> {
  const tenants = Array.from({ length: 10 }, () => newId('tnt'));
  const messages: Buffer[] = [];
  for (let at = 0; at < INGEST_EVENTS; at += 100) {
    const events = Array.from({ length: Math.min(100, INGEST_EVENTS - at) }, (_, i) =>
      verification(tenants[(at + i) % tenants.length]!, newId('mdt'), at + i),
    );
    messages.push(Buffer.from(JSON.stringify(events)));
  }
  const paths = {
    broker: (log: boolean) => ingestThroughBroker(messages, log),
    consumer: (log: boolean) => ingestOnce(messages, log, 'consumer'),
    store: (log: boolean) => ingestOnce(messages, log, 'store'),
  };
  for (const [path, ingestOnce] of Object.entries(paths)) {
    await ingestOnce(true); // warm-up, both sides
    await ingestOnce(false);
    const ratios: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const withFirst = round % 2 === 1;
      const a = await ingestOnce(withFirst);
      const b = await ingestOnce(!withFirst);
      const [withLog, without] = withFirst ? [a, b] : [b, a];
      ratios.push(withLog / without);
      out(
        `ingest (${path}) round ${round}: with the log ${Math.round(withLog).toLocaleString('en')}/s, ` +
          `without ${Math.round(without).toLocaleString('en')}/s, ratio ${(withLog / without).toFixed(2)}`,
      );
    }
    out(`ingest (${path}): median ratio ${median(ratios).toFixed(2)}`);
  }
}

/**
 * Audit's ingest as the service runs it: the messages wait in a queue of their own on the real
 * RabbitMQ (published before the clock starts), then the audit consumer (its batching, prefetch,
 * validation, write and acks) drains them into a memory store with or without the log. Events/s
 * from the consumer's start to the last event stored.
 */
async function ingestThroughBroker(messages: Buffer[], log: boolean): Promise<number> {
  const logger = createLogger('bench', 'silent');
  const topology = amqpTopology(`bench-${newId('req')}`);
  let consumer: Awaited<ReturnType<typeof startAuditConsumer>> | undefined;
  try {
    const publisher = new RabbitPublisher(TEST_AMQP_URL, logger, topology);
    let total = 0;
    for (const message of messages) {
      const events = JSON.parse(message.toString('utf8')) as AuditEvent[];
      total += events.length;
      await publisher.publish(events);
    }
    await publisher.close();
    const store = new MemoryEventStore({ log });
    const source = new RabbitEventSource({ url: TEST_AMQP_URL, logger, topology, prefetch: 200 });
    gc();
    const started = performance.now();
    consumer = await startAuditConsumer(source, store, logger);
    // A message the consumer refuses is dead-lettered, never handled: fail instead of waiting forever.
    while (consumer.handled < total) {
      if (performance.now() - started > 120_000)
        throw new Error(`ingest through the broker: ${consumer.handled} of ${total} events in 120 s`);
      await new Promise((r) => setTimeout(r, 1));
    }
    await integrated(store, log, total);
    return total / ((performance.now() - started) / 1000);
  } finally {
    await consumer?.stop();
    await deleteAmqpTopology(topology, TEST_AMQP_URL);
  }
}

/** A signer of checkpoints and evidence, and the mandates service as the export reads it. */
async function signing(): Promise<{
  sign: (claims: CheckpointClaims) => Promise<string>;
  mandates: MandatesSource;
  jwks: { keys: never[] };
}> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  // The kid is the key's RFC 7638 thumbprint, as the checker requires.
  const kid = await calculateJwkThumbprint(publicJwk);
  const jwk = { ...publicJwk, kid, alg: 'ES256', use: 'sig' };
  const jws = (payload: string, typ: string) =>
    new CompactSign(new TextEncoder().encode(payload))
      .setProtectedHeader({ alg: 'ES256', kid, typ })
      .sign(privateKey);
  // Shaped as a mandate's signature (its kid), over no mandate: the stand-in is not checked.
  const mandateJws = await new CompactSign(new TextEncoder().encode('{}'))
    .setProtectedHeader({ alg: 'ES256', kid })
    .sign(privateKey);
  const mandates: MandatesSource = {
    getMandate: async (ctx, id) =>
      ({
        id,
        tenant_id: ctx.tenantId,
        principal: { id: 'user_alice' },
        delegate: { id: 'agent_bob' },
        scope: { actions: ['payments:*'] },
        valid_from: '2026-01-01T00:00:00.000Z',
        expires_at: '2027-01-01T00:00:00.000Z',
        created_at: '2026-01-01T00:00:00.000Z',
        signature: { alg: 'ES256', kid, jws: mandateJws },
      }) as EvidenceMandate,
    publicKeys: async () => [jwk],
    signDigest: async (_ctx, digest) => ({ kid, jws: await jws(digest, 'mandate-evidence+jws') }),
    close: async () => undefined,
  };
  return {
    sign: (claims) => jws(canonicalJson(claims), AUDIT_CHECKPOINT_TYP),
    mandates,
    jwks: { keys: [jwk] as never[] },
  };
}

/** The tenant's tree filled to LEAVES leaves, the mandate's events spread over it; their ids. */
async function fill(store: MemoryEventStore, tenantId: string, mandateId: string): Promise<string[]> {
  const tree = new MemoryMerkleTree(merkleHasher);
  // The store's own tree of the tenant (a private field): leaves appended here as insert would.
  (store as unknown as { logs: Map<string, MemoryMerkleTree> }).logs.set(tenantId, tree);
  const ids: string[] = [];
  const stride = LEAVES / EXPORT_EVENTS;
  const index = new DataView(new ArrayBuffer(8));
  let next = 0;
  for (let i = 0; i < LEAVES; i++) {
    if (next < EXPORT_EVENTS && i === Math.floor((next + 0.5) * stride)) {
      const event = verification(tenantId, mandateId, next++);
      await store.insert(event);
      ids.push(event.id);
    } else {
      index.setFloat64(0, i);
      tree.append(merkleHasher.leafHash(new Uint8Array(index.buffer)));
    }
  }
  if (tree.size !== LEAVES) throw new Error(`the tree has ${tree.size} leaves`);
  return ids;
}

async function proofs(
  store: MemoryEventStore,
  tenantId: string,
  ids: string[],
  sign: (claims: CheckpointClaims) => Promise<string>,
): Promise<void> {
  const clock = { now: () => new Date() };
  const sizes = [1_000, Math.floor(LEAVES / 8) + 7, Math.floor(LEAVES / 2) + 3, LEAVES - 1];
  for (const size of sizes) {
    const [root] = await store.logHashes(tenantId, [[0, size]]);
    const claims = {
      tenant_id: tenantId,
      tree_size: size,
      root_hash: toBase64Url(root!),
      issued_at: clock.now().toISOString(),
    };
    await store.saveCheckpoint({ ...claims, jws: await sign(claims) });
  }
  const whole = (await checkpointNow(store, sign, tenantId, clock))!;
  const root = fromBase64Url(whole.root_hash)!;
  gc();
  const inclusion: number[] = [];
  for (let i = 0; i < PROOFS; i++) {
    const id = ids[Math.floor((i * ids.length) / PROOFS)]!;
    const started = performance.now();
    const proof = await inclusionProof(store, tenantId, id, LEAVES);
    inclusion.push(performance.now() - started);
    if (i % 50 === 0) {
      const path = proof.path.map((p) => fromBase64Url(p)!);
      if (!merkleHasher.verifyInclusion(proof.seq - 1, LEAVES, fromBase64Url(proof.leaf_hash)!, path, root))
        throw new Error(`inclusion proof of ${id} does not verify`);
    }
  }
  out(
    `inclusion proof at ${LEAVES.toLocaleString('en')} leaves (${PROOFS} proofs, ${ids.length.toLocaleString('en')} events spread over the tree): ` +
      `median ${ms(median(inclusion))} ms, p99 ${ms(quantile(inclusion, 0.99))} ms, max ${ms(Math.max(...inclusion))} ms (goal < 5 ms)`,
  );
  const consistency: number[] = [];
  for (let i = 0; i < PROOFS; i++) {
    const from = sizes[i % sizes.length]!;
    const started = performance.now();
    const proof = await consistencyProof(store, tenantId, from, LEAVES);
    consistency.push(performance.now() - started);
    if (i < sizes.length) {
      const old = (await store.getCheckpoint(tenantId, from))!;
      const path = proof.path.map((p) => fromBase64Url(p)!);
      if (!merkleHasher.verifyConsistency(from, LEAVES, fromBase64Url(old.root_hash)!, root, path))
        throw new Error(`consistency proof ${from} → ${LEAVES} does not verify`);
    }
  }
  out(
    `consistency proof ${sizes.map((s) => s.toLocaleString('en')).join(' | ')} → ${LEAVES.toLocaleString('en')}: ` +
      `median ${ms(median(consistency))} ms, p99 ${ms(quantile(consistency, 0.99))} ms, max ${ms(Math.max(...consistency))} ms (goal < 5 ms)`,
  );
}

/** One export: wall and CPU time (process.cpuUsage, user + system), the bytes written. */
interface ExportRun {
  seconds: number;
  cpuSeconds: number;
  bytes: number;
  text: string;
}

async function exports(
  store: MemoryEventStore,
  tenantId: string,
  mandateId: string,
  signer: Awaited<ReturnType<typeof signing>>,
): Promise<void> {
  const clock = { now: () => new Date() };
  // Without proofs: the bundle as before the log (no checkpoint to prove against, none signed).
  const noLog = Object.create(store, {
    latestCheckpoint: { value: async () => null },
  }) as MemoryEventStore;
  // The timed rounds hand each chunk on and drop it, as the response stream does: holding a
  // 17 MiB bundle in the benchmark's heap charged the larger bundle for the bench's own GC.
  const run = async (withProofs: boolean, keep = false): Promise<ExportRun> => {
    const chunks: string[] = [];
    let bytes = 0;
    gc();
    const cpu = process.cpuUsage();
    const started = performance.now();
    await exportEvidence(
      { store: withProofs ? store : noLog, mandates: signer.mandates, clock },
      { tenantId, internalToken: 'bench' },
      mandateId,
      {
        write: async (chunk) => {
          bytes += Buffer.byteLength(chunk);
          if (keep) chunks.push(chunk);
        },
      },
    );
    const seconds = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    return { seconds, cpuSeconds: (used.user + used.system) / 1e6, bytes, text: chunks.join('') };
  };
  const checked = await run(true, true);
  const checkStarted = performance.now();
  const results = await verifyBundleText(checked.text, { trustedKeys: signer.jwks.keys });
  const checkSeconds = (performance.now() - checkStarted) / 1000;
  // The mandate is a stand-in here (no mandates service): its own signature is not the point.
  const failed = results
    .filter((r) => !r.ok && r.check !== 'mandate signature')
    .map((r) => `${r.check}: ${r.detail}`);
  const plain = await run(false, true);
  const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(2);
  out(
    `export of ${EXPORT_EVENTS.toLocaleString('en')} events: ${plain.bytes.toLocaleString('en')} bytes (${mib(plain.bytes)} MiB) without proofs, ` +
      `${checked.bytes.toLocaleString('en')} (${mib(checked.bytes)} MiB) with, ×${(checked.bytes / plain.bytes).toFixed(3)}; ` +
      `checker (${checkSeconds.toFixed(2)} s): ${failed.length === 0 ? 'every check but the stand-in mandate’s signature OK' : `FAILED ${failed.join('; ')}`}`,
  );
  await exportRounds(run);
}

/** BENCH_ROUNDS rounds of the export with proofs and without, which goes first alternating. */
async function exportRounds(run: (withProofs: boolean) => Promise<ExportRun>): Promise<void> {
  const ratios: number[] = [];
  const cpuRatios: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const withFirst = round % 2 === 1;
    const a = await run(withFirst);
    const b = await run(!withFirst);
    const [withProofs, without] = withFirst ? [a, b] : [b, a];
    ratios.push(withProofs.seconds / without.seconds);
    cpuRatios.push(withProofs.cpuSeconds / without.cpuSeconds);
    out(
      `export round ${round}: with proofs ${withProofs.seconds.toFixed(3)} s (CPU ${withProofs.cpuSeconds.toFixed(3)} s), ` +
        `without ${without.seconds.toFixed(3)} s (CPU ${without.cpuSeconds.toFixed(3)} s), ` +
        `ratio ${(withProofs.seconds / without.seconds).toFixed(2)} wall, ${(withProofs.cpuSeconds / without.cpuSeconds).toFixed(2)} CPU`,
    );
  }
  out(
    `export: median ratio ${median(ratios).toFixed(2)} wall, ${median(cpuRatios).toFixed(2)} CPU (goal ≤ 1.5)`,
  );
}

async function main(): Promise<void> {
  out(
    `bench:audit-log — ${INGEST_EVENTS.toLocaleString('en')} events ingested per side, ${LEAVES.toLocaleString('en')} leaves, ` +
      `${EXPORT_EVENTS.toLocaleString('en')} events in the bundle, ${ROUNDS} rounds, Node ${process.version}`,
  );
  if (PARTS.has('ingest')) await ingest();
  const signer = await signing();
  const store = new MemoryEventStore();
  const tenantId = newId('tnt');
  const mandateId = newId('mdt');
  const started = performance.now();
  const ids = await fill(store, tenantId, mandateId);
  gc();
  out(
    `tree of ${LEAVES.toLocaleString('en')} leaves filled in ${((performance.now() - started) / 1000).toFixed(1)} s; ` +
      `heap ${(process.memoryUsage().heapUsed / 1024 / 1024).toFixed(0)} MiB, RSS ${(process.memoryUsage().rss / 1024 / 1024).toFixed(0)} MiB`,
  );
  if (PARTS.has('proofs')) await proofs(store, tenantId, ids, signer.sign);
  // The checkpoint of the whole tree the export proves against (the proofs part signs it too).
  else await checkpointNow(store, signer.sign, tenantId, { now: () => new Date() });
  if (PARTS.has('export')) await exports(store, tenantId, mandateId, signer);
}

main().catch((err) => {
  process.stderr.write(`bench:audit-log failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
