import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import type { RedisTarget } from '@mandate/shared/data';

const run = promisify(execFile);

/** The private ports the cluster's nodes may take (each also takes port + 10000 for its bus). */
const FIRST_PORT = 19300;
const LAST_PORT = 19399;
const NODES = 6;

/** A private Redis Cluster on its own ports: three masters, one replica each. */
export interface ClusterDeployment {
  ports: number[];
  /** `host:port,…`, as REDIS_CLUSTER_NODES takes it. */
  nodeList: string;
  /** What redisTarget answers for REDIS_CLUSTER_NODES = nodeList. */
  target: RedisTarget;
  /** A client of the test's own, to look at keys (not one of the services' clients). */
  client(): Cluster;
  /** The port of the master serving `slot` now. */
  masterOf(slot: number): Promise<number>;
  /** The node id and port of every master, lowest slot first. */
  masters(): Promise<{ id: string; port: number; firstSlot: number }[]>;
  /** Moves the first slot of the master `fromPort` to the master `toPort` with `redis-cli --cluster reshard`. */
  reshardFirstSlot(fromPort: number, toPort: number): Promise<void>;
  /** Stops (SIGSTOP) or resumes (SIGCONT) the node on `port`: a node that hangs without closing. */
  pause(port: number): void;
  resume(port: number): void;
  /** Deletes every key matching `pattern` on every master. */
  deleteKeys(pattern: string): Promise<void>;
  stop(): Promise<void>;
}

/** CRC16/XMODEM of `key`'s hash tag, mod 16384: Redis Cluster's slot of a key. */
export function slotOf(key: string): number {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  const hashed = close > open + 1 ? key.slice(open + 1, close) : key;
  let crc = 0;
  for (const byte of Buffer.from(hashed)) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16_384;
}

const portFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

/** The first block of NODES consecutive ports in the range whose client and bus ports are all free. */
async function freeBlock(): Promise<number> {
  for (let base = FIRST_PORT; base + NODES - 1 <= LAST_PORT; base += NODES) {
    const ports = Array.from({ length: NODES }, (_, i) => base + i);
    const free = await Promise.all(ports.flatMap((p) => [portFree(p), portFree(p + 10_000)]));
    if (free.every(Boolean)) return base;
  }
  throw new Error(`no ${NODES} free ports between ${FIRST_PORT} and ${LAST_PORT}`);
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function ask(port: number, ...args: string[]): Promise<unknown> {
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
  // A node not listening yet rejects connect(); without a listener ioredis also prints the error.
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.call(...(args as [string, ...string[]]));
  } finally {
    client.disconnect();
  }
}

/** Parses CLUSTER NODES into the masters, each with its lowest slot. */
async function mastersOf(port: number) {
  const lines = String(await ask(port, 'CLUSTER', 'NODES'))
    .trim()
    .split('\n');
  return lines
    .map((line) => line.split(' '))
    .filter((f) => f[2]!.includes('master') && f.length > 8)
    .map((f) => ({
      id: f[0]!,
      port: Number(/:(\d+)@/.exec(f[1]!)![1]),
      firstSlot: Math.min(...f.slice(8).map((range) => Number(range.split('-')[0]))),
    }))
    .sort((a, b) => a.firstSlot - b.firstSlot);
}

/**
 * Starts six `redis-server --cluster-enabled yes` nodes on private ports (no persistence, their own
 * directory), joins them with `redis-cli --cluster create … --cluster-replicas 1`, and returns once
 * every node says cluster_state:ok and knows the other five: the same binary the shared Redis runs.
 */
export async function startRedisCluster(): Promise<ClusterDeployment> {
  const dir = await mkdtemp(path.join(tmpdir(), 'redis-cluster-'));
  const base = await freeBlock();
  const ports = Array.from({ length: NODES }, (_, i) => base + i);
  const children = new Map<number, ChildProcess>();
  const stop = async () => {
    for (const child of children.values()) child.kill('SIGCONT');
    await Promise.all(
      [...children.values()].map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGKILL');
        await exited;
      }),
    );
    await rm(dir, { recursive: true, force: true });
  };
  try {
    for (const port of ports) {
      const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
      args.push('--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`);
      args.push('--cluster-node-timeout', '2000', '--dir', dir);
      children.set(port, spawn('redis-server', args, { stdio: 'ignore', cwd: dir }));
    }
    await Promise.all(ports.map((p) => until(async () => (await ask(p, 'PING')) === 'PONG', `node ${p}`)));
    const addresses = ports.map((p) => `127.0.0.1:${p}`);
    await run('redis-cli', ['--cluster', 'create', ...addresses, '--cluster-replicas', '1', '--cluster-yes']);
    await until(async () => {
      const infos = await Promise.all(ports.map((p) => ask(p, 'CLUSTER', 'INFO')));
      return infos.every(
        (i) => /cluster_state:ok/.test(String(i)) && /cluster_known_nodes:6/.test(String(i)),
      );
    }, 'cluster_state:ok on every node');
  } catch (err) {
    await stop();
    throw err;
  }
  const nodes = ports.map((port) => ({ host: '127.0.0.1', port }));
  const client = () => new Cluster(nodes.slice(0, 3), { lazyConnect: false });
  return {
    ports,
    nodeList: nodes.map((n) => `${n.host}:${n.port}`).join(','),
    target: { url: 'redis://cluster-ignored/0', clusterNodes: nodes },
    client,
    async masterOf(slot) {
      const slots = (await ask(ports[0]!, 'CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
      const owner = slots.find(([from, to]) => from <= slot && slot <= to);
      return Number(owner![2][1]);
    },
    masters: () => mastersOf(ports[0]!),
    pause: (port) => void children.get(port)!.kill('SIGSTOP'),
    resume: (port) => void children.get(port)!.kill('SIGCONT'),
    async reshardFirstSlot(fromPort, toPort) {
      const masters = await mastersOf(fromPort);
      const id = (port: number) => masters.find((m) => m.port === port)!.id;
      await run('redis-cli', [
        '--cluster',
        'reshard',
        `127.0.0.1:${fromPort}`,
        '--cluster-from',
        id(fromPort),
        '--cluster-to',
        id(toPort),
        '--cluster-slots',
        '1',
        '--cluster-yes',
      ]);
      // Every node knows the new owner before the test goes on.
      const slot = masters.find((m) => m.port === fromPort)!.firstSlot;
      await until(async () => {
        const owners = await Promise.all(
          ports.map(async (p) => {
            const slots = (await ask(p, 'CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
            return slots.find(([from, to]) => from <= slot && slot <= to)?.[2][1];
          }),
        );
        return owners.every((o) => Number(o) === toPort);
      }, `every node to see slot ${slot} on ${toPort}`);
    },
    async deleteKeys(pattern) {
      for (const { port } of await mastersOf(ports[0]!)) {
        const redis = new Redis({ port, host: '127.0.0.1' });
        try {
          let cursor = '0';
          do {
            const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
            cursor = next;
            for (const key of keys) await redis.del(key);
          } while (cursor !== '0');
        } finally {
          redis.disconnect();
        }
      }
    },
    stop,
  };
}
