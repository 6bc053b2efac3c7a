/**
 * `npm run bench:memory-stores` — the embedded mode's audit store (MemoryEventStore) filled with
 * BENCH_EVENTS events (default 1,000,000) across BENCH_TENANTS tenants (default 100; the measured
 * tenant holds a quarter of all events, the others share the rest), in realistic shapes: API calls
 * (no resource, the key that made them), verifications and mandate lifecycle events (about a
 * mandate). Producers interleave, so ids arrive slightly out of order, as from several processes;
 * events arrive as the bus delivers them (copies, no string shared with another event).
 *
 * Then, for the big tenant and for a small one, each call BENCH_CALLS times (default 200):
 * `list` limit 50 (first page, a page deep behind a cursor, filtered by one type, by two types, by
 * resource_id, by key_id, by since/until: an hour ending at the cursor's depth, a minute further
 * back) and `get`; median, p90 and p99 per call in ms, and the p99 of the calls no GC pause fell
 * into (a young-generation collection of the ~1 GB heap stops every call that is running, whatever
 * it does: that is the heap's cost, not the list's). Then the heap and RSS the store holds per 1M
 * events (after a forced GC; run with --expose-gc, as the npm script does). Last, the mandates
 * store (see `mandates` below).
 */
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { newId } from '@mandate/shared/core';
import { type AuditEvent, type EventType } from '@mandate/shared/events';
import { anyEvent } from '@mandate/shared/testing';
import { MemoryEventStore, type EventListQuery } from '@mandate/audit/testing';
import {
  type Mandate,
  type MandateState,
  type ListMandatesQuery,
  MemoryMandateStore,
} from '@mandate/mandates/testing';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const TENANTS = Number(process.env.BENCH_TENANTS ?? 100);
const CALLS = Number(process.env.BENCH_CALLS ?? 200);
const MANDATES = Number(process.env.BENCH_MANDATES ?? 100_000);
const LIMIT = 50;

/** A deterministic generator (mulberry32), so every run stores the same shapes. */
let seed = 42;
function random(): number {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

interface TenantShape {
  id: string;
  keys: string[];
  mandates: string[];
}

function tenantShape(): TenantShape {
  return {
    id: newId('tnt'),
    keys: Array.from({ length: 5 }, () => newId('key')),
    mandates: Array.from({ length: 200 }, () => newId('mdt')),
  };
}

const LIFECYCLE: EventType[] = [
  'MANDATE_CREATED',
  'MANDATE_SUSPENDED',
  'MANDATE_REACTIVATED',
  'MANDATE_REVOKED',
];

function realisticEvent(t: TenantShape, at: number): AuditEvent {
  const keyId = pick(t.keys);
  const caller = {
    tenantId: t.id,
    actor: { type: 'api_key' as const, key_id: keyId },
    permissions: [],
    requestId: newId('req'),
  };
  const roll = random();
  if (roll < 0.6) {
    return anyEvent({
      type: 'API_CALL',
      tenantId: t.id,
      resource: null,
      caller,
      occurredAt: new Date(at),
      data: {
        method: 'POST',
        route: '/v1/verify',
        path: '/v1/verify',
        status: 200,
        duration_ms: Math.round(random() * 500) / 100,
        key_id: keyId,
        subject_id: null,
      },
    });
  }
  const mandate = pick(t.mandates);
  if (roll < 0.9) {
    return anyEvent({
      type: 'VERIFICATION_PERFORMED',
      tenantId: t.id,
      resource: { type: 'mandate', id: mandate },
      caller,
      occurredAt: new Date(at),
      data: {
        input: {
          action: 'payments:create',
          amount: { value: Math.floor(random() * 10000), currency: 'EUR' },
        },
        decision: random() < 0.9 ? 'ALLOW' : 'DENY',
        reason: 'WITHIN_SCOPE',
        decision_id: newId('dec'),
        mandate_version: 1,
      },
    });
  }
  return anyEvent({
    type: pick(LIFECYCLE),
    tenantId: t.id,
    resource: { type: 'mandate', id: mandate },
    caller,
    occurredAt: new Date(at),
    data: { state: 'ACTIVE', version: 2 },
  });
}

function gc(): void {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (collect) {
    collect();
    collect();
  }
}

/** GC pauses as the runtime reports them, to tell a call's own cost from a collection that hit it. */
const gcPauses: { start: number; end: number }[] = [];
const gcObserver = new PerformanceObserver((entries) => {
  for (const e of entries.getEntries()) gcPauses.push({ start: e.startTime, end: e.startTime + e.duration });
});

async function time(name: string, call: () => Promise<unknown>): Promise<void> {
  for (let i = 0; i < Math.min(20, CALLS); i++) await call();
  const samples: { ms: number; start: number; end: number }[] = [];
  for (let i = 0; i < CALLS; i++) {
    const start = performance.now();
    await call();
    const end = performance.now();
    samples.push({ ms: end - start, start, end });
  }
  // The observer reports on a later tick.
  await new Promise((resolve) => setTimeout(resolve, 20));
  const hit = (s: { start: number; end: number }) => gcPauses.some((p) => p.start < s.end && p.end > s.start);
  const quantile = (ms: number[], q: number) => {
    const sorted = [...ms].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  };
  const all = samples.map((s) => s.ms);
  const clean = samples.filter((s) => !hit(s)).map((s) => s.ms);
  const f = (ms: number | undefined) => (ms === undefined ? '      –   ' : `${ms.toFixed(3).padStart(7)} ms`);
  console.log(
    `${name.padEnd(50)} median ${f(quantile(all, 0.5))}  p90 ${f(quantile(all, 0.9))}  p99 ${f(quantile(all, 0.99))}` +
      `  (p99 ${f(quantile(clean, 0.99))} without the ${all.length - clean.length} calls a GC pause hit)`,
  );
}

/**
 * EVENTS realistic events across TENANTS tenants (a quarter in one big tenant), inserted in
 * batches of 100 as the bus delivers them; one id in ten batches kept for the gets.
 */
async function fillEvents(): Promise<{
  store: MemoryEventStore;
  big: TenantShape;
  small: TenantShape;
  /** Every tenant but the big one: still reachable while the memory is read, as before the split. */
  others: TenantShape[];
  sampleIds: { tenant: string; id: string }[];
  fillStart: number;
}> {
  const store = new MemoryEventStore();
  const big = tenantShape();
  const others = Array.from({ length: TENANTS - 1 }, tenantShape);
  const small = others[0]!;
  const sampleIds: { tenant: string; id: string }[] = [];
  let at = Date.parse('2026-01-01T00:00:00.000Z');
  const fillStart = Date.now();
  const BATCH = 100;
  for (let done = 0; done < EVENTS; done += BATCH) {
    const batch: AuditEvent[] = [];
    for (let i = 0; i < BATCH && done + i < EVENTS; i++) {
      at += 10;
      const t = random() < 0.25 ? big : pick(others);
      batch.push(realisticEvent(t, at));
    }
    // Several producers: a batch reaches the store a little shuffled.
    for (let i = batch.length - 1; i > 0; i--) {
      const j = Math.max(0, i - Math.floor(random() * 8));
      [batch[i], batch[j]] = [batch[j]!, batch[i]!];
    }
    // As the bus delivers them (structuredClone in process, JSON from RabbitMQ): every event its
    // own strings, none shared with the generator's, so the memory figure is the real one.
    await store.insertMany(structuredClone(batch));
    if ((done / BATCH) % 10 === 0) {
      const e = batch[0]!;
      sampleIds.push({ tenant: e.tenant_id!, id: e.id });
    }
  }
  return { store, big, small, others, sampleIds, fillStart };
}

/** The list cases on one tenant's events, each timed. */
async function listCases(store: MemoryEventStore, label: string, t: TenantShape): Promise<void> {
  // The cursors and instants the cases use, read from a long page that is garbage afterwards.
  const { count, depth, deep, mid, start } = await store.list(t.id, { limit: 10_000 }).then((first) => {
    const depth = Math.min(first.length - 1, 5_000);
    return {
      count: first.length,
      depth,
      deep: first[depth]!.id,
      mid: Date.parse(first[depth]!.occurred_at),
      start: Date.parse(first[first.length - 1]!.occurred_at),
    };
  });
  // That page's 10,000 copies are the bench's garbage, not the store's: collect them first.
  gc();
  console.log(`\n${label}: ${count >= 10_000 ? '≥ ' : ''}${count.toLocaleString('en')} events`);
  const list = (name: string, q: Omit<EventListQuery, 'limit'>) =>
    time(`list ${name}`, () => store.list(t.id, { limit: LIMIT, ...q }));
  await list('first page', {});
  await list(`page behind a cursor (${depth.toLocaleString('en')} deep)`, { afterId: deep });
  await list('type=MANDATE_REVOKED', { types: ['MANDATE_REVOKED'] });
  await list('type=MANDATE_CREATED,MANDATE_REVOKED', { types: ['MANDATE_CREATED', 'MANDATE_REVOKED'] });
  await list('resource_id', { resource_id: t.mandates[0]! });
  await list('key_id + cursor', { key_id: t.keys[0]!, afterId: deep });
  await list('since/until (an hour, ending 5,000 deep)', {
    since: new Date(mid - 3_600_000).toISOString(),
    until: new Date(mid).toISOString(),
  });
  await list('since/until (a minute, further back)', {
    since: new Date(start - 120_000).toISOString(),
    until: new Date(start - 60_000).toISOString(),
  });
}

async function main(): Promise<void> {
  gcObserver.observe({ entryTypes: ['gc'] });
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const rssBefore = process.memoryUsage().rss;

  const { store, big, small, others, sampleIds, fillStart } = await fillEvents();
  const fillMs = Date.now() - fillStart;
  gc();
  const heapAfter = process.memoryUsage().heapUsed;
  const rssAfter = process.memoryUsage().rss;
  console.log(
    `filled ${EVENTS.toLocaleString('en')} events across ${TENANTS} tenants in ${(fillMs / 1000).toFixed(1)} s ` +
      `(${((fillMs * 1000) / EVENTS).toFixed(1)} µs per insert)`,
  );

  for (const [label, t] of [
    ['big tenant', big],
    ['small tenant', small],
  ] as const) {
    await listCases(store, label, t);
  }
  const gets = sampleIds.filter((s) => s.tenant === big.id);
  let g = 0;
  console.log('');
  await time('get (own tenant)', () => {
    const s = gets[g++ % gets.length]!;
    return store.get(s.tenant, s.id);
  });
  await time('get (another tenant → null)', () => {
    const s = gets[g++ % gets.length]!;
    return store.get(small.id, s.id);
  });

  const perMillion = (bytes: number) => `${(((bytes / EVENTS) * 1e6) / 2 ** 20).toFixed(0)} MiB`;
  console.log(
    `\nmemory per 1M events: heap ${perMillion(heapAfter - heapBefore)}, RSS ${perMillion(rssAfter - rssBefore)}` +
      ((globalThis as { gc?: unknown }).gc ? '' : ' (no --expose-gc: not collected first, an upper bound)'),
  );
  // Keeps the store (and the tenants it was filled for) reachable until the memory was read.
  if (store.kind !== 'memory' || others.length !== TENANTS - 1) throw new Error('unexpected store');
  await mandates();
  gcObserver.disconnect();
}

/**
 * The mandates store the same way, smaller (BENCH_MANDATES, default 100,000, a quarter in one
 * tenant): list limit 50 unfiltered, by state (EXPIRED reads the stored EXPIRED, ACTIVE and
 * SUSPENDED ones), by principal, by delegate behind a cursor.
 */
async function mandates(): Promise<void> {
  const store = new MemoryMandateStore();
  const big = tenantShape();
  const others = Array.from({ length: TENANTS - 1 }, tenantShape);
  const now = new Date('2026-06-01T00:00:00.000Z');
  const states: MandateState[] = ['ACTIVE', 'ACTIVE', 'ACTIVE', 'SUSPENDED', 'REVOKED', 'EXPIRED'];
  for (let i = 0; i < MANDATES; i++) {
    const t = random() < 0.25 ? big : pick(others);
    const at = new Date(now.getTime() - (MANDATES - i) * 1000).toISOString();
    const mandate: Mandate = {
      id: newId('mdt'),
      tenant_id: t.id,
      principal: { id: `user-${Math.floor(random() * 500)}`, type: 'person' },
      delegate: { id: `agent-${Math.floor(random() * 50)}`, type: 'agent' },
      scope: { actions: ['payments:create'], constraints: { max_amount: 5000, currency: 'EUR' } },
      state: pick(states),
      valid_from: null,
      // One in ten past expiry: ACTIVE ones the sweeper has not reached yet read as EXPIRED.
      expires_at: new Date(now.getTime() + (random() < 0.1 ? -1 : 1) * 86_400_000).toISOString(),
      metadata: {},
      version: 1,
      created_at: at,
      updated_at: at,
      signature: { alg: 'ES256', kid: 'kid', jws: 'a.b.c' },
    };
    await store.create(t.id, mandate);
  }
  const first = await store.list(big.id, { limit: 5_000, now });
  const deep = first[first.length - 1]!.id;
  gc();
  console.log(`\nmandates: ${MANDATES.toLocaleString('en')} across ${TENANTS} tenants, a quarter in one`);
  const list = (name: string, q: Omit<ListMandatesQuery, 'limit' | 'now'>) =>
    time(`mandates list ${name}`, () => store.list(big.id, { limit: LIMIT, now, ...q }));
  await list('first page', {});
  await list('page behind a cursor (5,000 deep)', { afterId: deep });
  await list('state=ACTIVE', { state: 'ACTIVE' });
  await list('state=EXPIRED', { state: 'EXPIRED' });
  await list('principal_id', { principal_id: 'user-7' });
  await list('delegate_id + cursor', { delegate_id: 'agent-3', afterId: deep });
  await time('mandates get', () => store.get(big.id, deep));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
