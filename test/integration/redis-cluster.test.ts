import pino from 'pino';
import { Cluster, Redis } from 'ioredis';
import { newId } from '@mandate/shared/core';
import { processMetrics } from '@mandate/shared/observability';
import { snapshotKey } from '@mandate/shared/mandate';
import {
  ReplicaNotAcknowledged,
  awaitReplica,
  describeRedis,
  failFastRedis,
  redisTarget,
  waitUntilReady,
} from '@mandate/shared/data';
import { testSnapshotMac } from '@mandate/shared/testing';
import {
  PlanLimiter,
  RedisIdempotencyStore,
  RedisLimiterBackend,
  describeLimits,
  resolveLimits,
  type StoredResponse,
} from '@mandate/gateway/testing';
import { RedisSnapshots, buildMandate } from '@mandate/mandates/testing';
import { RedisSnapshotSource } from '@mandate/verify/testing';
import { slotOf, startRedisCluster, type ClusterDeployment } from '../support/redis-cluster';
import { apiClient, createTenant, eventually, startStack } from '../support/stack';
import { expectNoStaleDecision, startSnapshotWorld, type SnapshotWorld } from './snapshot-support';

/**
 * Redis Cluster (docs/DECISIONS.md, "Redis Cluster"): the services' own clients and scripts on six
 * real `redis-server --cluster-enabled yes` nodes (three masters, three replicas) on private ports.
 * The gateway's limits suite runs here once more; the Idempotency-Key records and the mandate
 * snapshots (mandates writes and fences, verify reads) work on it; a slot moving under load
 * (`redis-cli --cluster reshard`) costs no error and resets no counter.
 */
let cluster: ClusterDeployment;
const silent = pino({ level: 'silent' });

beforeAll(async () => {
  cluster = await startRedisCluster();
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

/** Every key matching `pattern`, from every master. */
async function clusterKeys(pattern: string): Promise<string[]> {
  const found: string[] = [];
  for (const { port } of await cluster.masters()) {
    const node = new Redis({ port, host: '127.0.0.1' });
    try {
      found.push(...(await node.keys(pattern)));
    } finally {
      node.disconnect();
    }
  }
  return found;
}

/** One command to one node. */
async function nodeCall(port: number, ...args: [string, ...string[]]): Promise<unknown> {
  const node = new Redis({ port, host: '127.0.0.1' });
  try {
    return await node.call(...args);
  } finally {
    node.disconnect();
  }
}

describe('Redis Cluster configuration', () => {
  it('when REDIS_CLUSTER_NODES is set, then the start line names the topology; with Sentinel, another database or braces in REDIS_PREFIX it is one config error', () => {
    const target = redisTarget({
      REDIS_URL: 'redis://:secret@cluster/0',
      REDIS_CLUSTER_NODES: cluster.nodeList,
    })!;
    expect(target.clusterNodes).toHaveLength(6);
    expect(describeRedis(target)).toBe(`Redis Cluster via ${cluster.nodeList}`);
    expect(() =>
      redisTarget({ REDIS_URL: 'redis://x/0', REDIS_CLUSTER_NODES: 'a:1', REDIS_SENTINELS: 'b:2' }),
    ).toThrow('REDIS_CLUSTER_NODES: cannot be set together with REDIS_SENTINELS: choose one');
    expect(() => redisTarget({ REDIS_URL: 'redis://x/2', REDIS_CLUSTER_NODES: 'a:1' })).toThrow(
      'REDIS_URL: names database 2; a Redis Cluster has only database 0',
    );
    expect(() => redisTarget({ REDIS_CLUSTER_NODES: 'a:1' })).toThrow(
      'REDIS_URL: is required with REDIS_CLUSTER_NODES',
    );
    expect(() =>
      redisTarget({ REDIS_URL: 'redis://x', REDIS_CLUSTER_NODES: 'a:1', REDIS_PREFIX: '{m}:' }),
    ).toThrow('REDIS_PREFIX: must not contain { or } with REDIS_CLUSTER_NODES');
    expect(() => redisTarget({ REDIS_URL: 'redis://x', REDIS_CLUSTER_NODES: 'a:1,b' })).toThrow(
      'REDIS_CLUSTER_NODES: "b" is not host:port',
    );
  });

  it('when a fail-fast client is not connected yet, then a command is refused at once; when a master hangs, a command for its slot fails within the command timeout', async () => {
    const client = failFastRedis(cluster.target);
    client.on('error', () => undefined);
    try {
      await expect(client.get('cluster-test:k')).rejects.toThrow(/enableOfflineQueue/);
      expect(await waitUntilReady(client, 10_000)).toBe(true);
      await client.set('cluster-test:k', 'v');
      expect(await client.get('cluster-test:k')).toBe('v');
      const port = await cluster.masterOf(slotOf('cluster-test:k'));
      // Shorter than the nodes' failure detection (2 s): the master hangs, nothing fails over.
      cluster.pause(port);
      const started = Date.now();
      try {
        await expect(client.get('cluster-test:k')).rejects.toThrow(/timed out/);
      } finally {
        cluster.resume(port);
      }
      expect(Date.now() - started).toBeLessThan(2_500);
      await client.del('cluster-test:k');
    } finally {
      client.disconnect();
    }
  });
});

describe('replica acknowledgements on a Redis Cluster (docs/DECISIONS.md, "Redis failover")', () => {
  it("when a key's master has a replica, then awaitReplica waits for it over that master's connection; with the replica stopped, it is refused within its bound", async () => {
    const client = failFastRedis(cluster.target);
    client.on('error', () => undefined);
    try {
      expect(await waitUntilReady(client, 10_000)).toBe(true);
      // One key served by each master.
      const byMaster = new Map<number, string>();
      for (let i = 0; byMaster.size < 3 && i < 200; i++) {
        const key = `cluster-wait:${i}`;
        const port = await cluster.masterOf(slotOf(key));
        if (!byMaster.has(port)) byMaster.set(port, key);
      }
      expect(byMaster.size).toBe(3);
      for (const key of byMaster.values()) {
        await client.set(key, 'v');
        // Just after the Cluster's creation its replicas may still be joining (none known: 0) or in
        // their first sync (known, not online: refused).
        const acked = await eventually(
          () =>
            awaitReplica(client, key).then(
              (n) => (n === 1 ? n : undefined),
              () => undefined,
            ),
          20_000,
          `the replica of the master serving ${key}`,
        );
        expect(acked).toBe(1);
      }
      const [master, key] = [...byMaster][0]!;
      const role = (await nodeCall(master, 'ROLE')) as [string, number, [string, string, string][]];
      const replica = Number(role[2][0]![1]);
      // Shorter than the nodes' failure detection (2 s): the replica hangs, nothing fails over.
      cluster.pause(replica);
      const started = Date.now();
      try {
        await client.set(key, 'w');
        await expect(awaitReplica(client, key, 300)).rejects.toThrow(ReplicaNotAcknowledged);
      } finally {
        cluster.resume(replica);
      }
      expect(Date.now() - started).toBeLessThan(1_500);
      await Promise.all([...byMaster.values()].map((k) => client.del(k)));
    } finally {
      client.disconnect();
    }
  });
});

describeLimits({
  name: 'Redis Cluster',
  target: () => cluster.target,
  hashTags: true,
  client: () => cluster.client(),
  keys: clusterKeys,
  deleteKeys: (pattern) => cluster.deleteKeys(pattern),
});

describe('Idempotency-Key records on a Redis Cluster', () => {
  const prefix = `test-idem-${newId('req')}`;
  const response: StoredResponse = { status: 201, headers: {}, body: Buffer.from('{}').toString('base64') };
  let store: RedisIdempotencyStore;
  beforeAll(async () => {
    store = new RedisIdempotencyStore(cluster.target, prefix, silent);
    await store.ready(10_000);
  });
  afterAll(async () => {
    await store.close();
    await cluster.deleteKeys(`${prefix}*`);
  });

  it('when keys of many tenants land on every master, then each is locked, completed, replayed and released there', async () => {
    const tenants = Array.from({ length: 12 }, (_, i) => `tnt_${i}`);
    for (const t of tenants) {
      const lock = { fingerprint: `f-${t}`, token: 'holder' };
      expect(await store.acquire(t, 'k', lock, 60_000)).toBeNull();
      expect(await store.acquire(t, 'k', { fingerprint: lock.fingerprint, token: 'x' }, 60_000)).toEqual({
        state: 'pending',
        ...lock,
      });
      await store.renew(t, 'k', lock, 60_000);
      await store.complete(t, 'k', lock, response, 60_000);
      expect(await store.acquire(t, 'k', { fingerprint: lock.fingerprint, token: 'y' }, 60_000)).toEqual({
        state: 'done',
        fingerprint: lock.fingerprint,
        response,
      });
      const other = { fingerprint: 'g', token: 'h' };
      expect(await store.acquire(t, 'free', other, 60_000)).toBeNull();
      await store.release(t, 'free', other);
      expect(await store.acquire(t, 'free', other, 60_000)).toBeNull();
    }
    // Spread over the masters, not in one slot.
    const perMaster = await Promise.all(
      (await cluster.masters()).map(async (m) => (await nodeCall(m.port, 'KEYS', `${prefix}:*`)) as string[]),
    );
    expect(perMaster.map((keys) => keys.length > 0)).toEqual([true, true, true]);
    expect(perMaster.flat()).toHaveLength(24);
  });
});

describe('mandate snapshots on a Redis Cluster (mandates writes, verify reads)', () => {
  const prefix = `test:${newId('req')}:snapshot:`;
  let snapshots: RedisSnapshots;
  let source: RedisSnapshotSource;
  beforeAll(async () => {
    snapshots = await RedisSnapshots.connect(cluster.target, silent, {
      prefix,
      mac: testSnapshotMac,
      ttlSeconds: 120,
    });
    source = await RedisSnapshotSource.connect(cluster.target, silent, prefix);
  });
  afterAll(async () => {
    await snapshots.close();
    await source.close();
    await cluster.deleteKeys(`${prefix}*`);
  });

  it('when mandates of several tenants are written and fenced, then verify reads the newest, never an older one, and nothing below a fence', async () => {
    const mandates = Array.from({ length: 9 }, (_, i) =>
      buildMandate({ tenant_id: `tnt_${i}`, id: `mdt_${i}`, version: 2 }),
    );
    for (const m of mandates) {
      expect(await snapshots.write(m)).toBe(true);
      expect(await snapshots.write({ ...m, version: 1 })).toBe(false);
      const read = await source.read(m.tenant_id, m.id);
      expect(JSON.parse(read!.json)).toMatchObject({ id: m.id, version: 2 });
      expect(testSnapshotMac.check(read!.json, read!.mac)).toBe(true);
      await snapshots.fence(m.tenant_id, m.id, 3);
      expect(await source.read(m.tenant_id, m.id)).toBeNull();
      expect(await snapshots.write({ ...m, version: 3, state: 'REVOKED' })).toBe(true);
      expect(JSON.parse((await source.read(m.tenant_id, m.id))!.json)).toMatchObject({ state: 'REVOKED' });
    }
    const holders = new Set(
      await Promise.all(
        mandates.map((m) => cluster.masterOf(slotOf(snapshotKey(prefix, m.tenant_id, m.id)))),
      ),
    );
    expect(holders.size).toBeGreaterThan(1);
  });

  it("when mandates and verify read Redis's clock, then both read the one master serving the clock key's slot", async () => {
    const masters = await cluster.masters();
    const reset = () => Promise.all(masters.map((m) => nodeCall(m.port, 'CONFIG', 'RESETSTAT')));
    await reset();
    for (let i = 0; i < 10; i++) {
      const [a, b] = await Promise.all([snapshots.time(), source.time()]);
      expect(Math.abs(a - b)).toBeLessThan(1_000);
    }
    const clockMaster = await cluster.masterOf(slotOf(`${prefix}clock`));
    const readers = [];
    for (const m of masters) {
      const stats = String(await nodeCall(m.port, 'INFO', 'commandstats'));
      if (/cmdstat_time:calls=/.test(stats)) readers.push(m.port);
    }
    expect(readers).toEqual([clockMaster]);
  });
});

describe('no stale decision after a lifecycle call on a Redis Cluster (two verify replicas)', () => {
  let world: SnapshotWorld;
  beforeAll(async () => {
    world = await startSnapshotWorld({
      replicas: 2,
      redis: {
        client: (autoPipelining) =>
          new Cluster(cluster.target.clusterNodes!, { enableAutoPipelining: autoPipelining }),
        deleteKeys: (pattern) => cluster.deleteKeys(pattern),
      },
    });
  });
  afterAll(async () => {
    await world?.close();
  });

  it(
    'when verifies run concurrently with suspend/reactivate/revoke, then none sent after a lifecycle response carries an older mandate_version, and none after the revoke is an ALLOW',
    () => expectNoStaleDecision(world),
    60_000,
  );
});

describe('a slot moving while callers are limited', () => {
  const fallbacks = async () => {
    const metric = await processMetrics().registry.getSingleMetric('rate_limit_redis_fallbacks_total')!.get();
    return metric.values.reduce((sum, v) => sum + v.value, 0);
  };

  it("when the slot holding a caller's counters is resharded under load on two gateways, then every check answers and no counter starts over", async () => {
    const [from, to] = await cluster.masters();
    // A caller whose hash tag falls in the first slot of a master: the slot reshard moves.
    const tenant = 'tnt_reshard';
    let n = 0;
    while (slotOf(`{${tenant}:key_${n}}`) !== from!.firstSlot) n++;
    const subject = { kind: 'caller' as const, id: `${tenant}:key_${n}`, plan: 'beta' as const };
    const prefix = `test:rl:${newId('req')}`;
    const burst = 40;
    const limits = resolveLimits({ beta: { global: { rate: 0.01, burst } } });
    const limiters = await Promise.all(
      [1, 2].map(async () => {
        const backend = new RedisLimiterBackend(cluster.target, silent);
        await backend.ready(10_000);
        return new PlanLimiter(limits, backend, { prefix });
      }),
    );
    try {
      const fallbacksBefore = await fallbacks();
      let passed = 0;
      let refused = 0;
      const load = async (moving: Promise<void>) => {
        let done = false;
        void moving.finally(() => (done = true));
        while (!done) {
          const decisions = await Promise.all(limiters.map((l) => l.check(subject)));
          for (const d of decisions) {
            if (d.allowed) passed++;
            else refused++;
          }
          await new Promise((r) => setTimeout(r, 5));
        }
      };
      const moving = cluster.reshardFirstSlot(from!.port, to!.port);
      await Promise.all([moving, load(moving)]);
      await load(new Promise((r) => setTimeout(r, 300)));
      expect(await cluster.masterOf(from!.firstSlot)).toBe(to!.port);
      const fellBack = (await fallbacks()) - fallbacksBefore;
      console.info(
        `reshard under load: ${passed} passed, ${refused} refused, ${fellBack} decided in process`,
      );
      expect(refused).toBeGreaterThan(0);
      // The cluster answered every check (ASK and MOVED followed): none fell back to a per-process limiter.
      expect(fellBack).toBe(0);
      // At most the two replicas' bound (half a burst): the bucket never started over on the new master.
      expect(passed).toBeLessThanOrEqual(burst + burst / 2);
      for (const l of limiters) expect((await l.check(subject)).allowed).toBe(false);
      // Every pass decided on Redis is in the month's counter, now on the other master.
      const month = new Date().toISOString().slice(0, 7);
      const client = cluster.client();
      try {
        const counted = Number(await client.get(`${prefix}:quota:{${subject.id}}:${month}`));
        expect(counted).toBe(passed);
      } finally {
        await client.quit();
      }
    } finally {
      for (const l of limiters) await l.close();
      await cluster.deleteKeys(`${prefix}:*`);
    }
  }, 30_000);
});

describe('the five processes on a Redis Cluster', () => {
  it('when they start with REDIS_CLUSTER_NODES, then each Redis user says so, limits, a replayed Idempotency-Key and the snapshots live in the Cluster, and a revoke is seen by the next verify', async () => {
    const stack = await startStack({
      // info: the start lines that name the topology.
      all: {
        REDIS_URL: 'redis://cluster-ignored/0',
        REDIS_CLUSTER_NODES: cluster.nodeList,
        LOG_LEVEL: 'info',
      },
    });
    try {
      for (const p of [stack.gateway, stack.services.mandates, stack.services.verify])
        expect(p.output.join('')).toContain(`Redis Cluster via ${cluster.nodeList}`);
      const { auth } = await createTenant(stack, { name: 'Cluster', plan: 'enterprise' });
      const api = apiClient(stack.gateway.url);
      const body = {
        principal: { id: 'user_1', type: 'person' },
        delegate: { id: 'agent_1', type: 'agent' },
        scope: { actions: ['payments:*'] },
      };
      const headers = { 'idempotency-key': 'cluster-create-1' };
      const created = await api('POST', '/v1/mandates', { auth, body, headers });
      expect(created.status).toBe(201);
      const again = await api('POST', '/v1/mandates', { auth, body, headers });
      expect(again).toMatchObject({ status: 201, body: { id: created.body.id } });
      const ask = () =>
        api('POST', '/v1/verify', { auth, body: { mandate_id: created.body.id, action: 'payments:create' } });
      expect((await ask()).body.decision).toBe('ALLOW');
      expect((await api('POST', `/v1/mandates/${created.body.id}/revoke`, { auth, body: {} })).status).toBe(
        200,
      );
      expect((await ask()).body).toMatchObject({ decision: 'DENY', reason: 'MANDATE_REVOKED' });
      const usage = await api('GET', '/v1/usage', { auth });
      expect(usage.status).toBe(200);
      expect(usage.body.usage[0].used).toBeGreaterThanOrEqual(6);
      // In the Cluster, not in the shared Redis: the snapshot, the record and the caller's tagged counters.
      expect(await clusterKeys(`${stack.redisPrefix}snapshot:*`)).toHaveLength(1);
      expect((await clusterKeys(`${stack.redisPrefix}idem:*`)).length).toBeGreaterThanOrEqual(1);
      expect((await clusterKeys(`${stack.redisPrefix}rl:quota:{*}:*`)).length).toBeGreaterThanOrEqual(1);
    } finally {
      await stack.stop();
    }
  }, 120_000);
});
