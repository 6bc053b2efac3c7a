import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './stack';

/** A private Redis Sentinel deployment on its own ports: one master, one replica, three sentinels. */
export interface SentinelDeployment {
  name: string;
  sentinels: { host: string; port: number }[];
  /** `host:port,…`, as REDIS_SENTINELS takes it. */
  sentinelList: string;
  masterPort: number;
  replicaPort: number;
  /** The port of the node the sentinels name as master now. */
  currentMasterPort(): Promise<number>;
  /** SIGKILLs the node on `port` (no shutdown, no last write). */
  kill(port: number): Promise<void>;
  /** SIGSTOPs / SIGCONTs the node on `port`: a replica that falls behind while its link stays open. */
  pause(port: number): void;
  resume(port: number): void;
  /** Starts redis-server again on a killed node's port, empty, as a replica of the current master; resolves once synced and known to every sentinel. */
  rejoin(port: number): Promise<void>;
  stop(): Promise<void>;
}

const started = (child: ChildProcess, what: string) =>
  new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`${what} exited with ${code} at start`)));
    setTimeout(resolve, 200);
  });

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Starts redis-server twice (master, replica of it) and three `redis-server --sentinel` processes
 * watching the master, quorum 2, down after 1 s: the same binary the shared Redis runs, never a mock.
 */
export async function startSentinelDeployment(name = 'mandate-test'): Promise<SentinelDeployment> {
  const dir = await mkdtemp(path.join(tmpdir(), 'sentinel-'));
  const children = new Map<number, ChildProcess>();
  const node = (port: number, extra: string[]) => {
    const child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...extra],
      {
        stdio: 'ignore',
        cwd: dir,
      },
    );
    children.set(port, child);
    return started(child, `redis-server on ${port}`);
  };
  const masterPort = await freePort();
  const replicaPort = await freePort();
  await node(masterPort, []);
  await node(replicaPort, ['--replicaof', '127.0.0.1', String(masterPort)]);
  const sentinelPorts = [await freePort(), await freePort(), await freePort()];
  for (const port of sentinelPorts) {
    const conf = path.join(dir, `sentinel-${port}.conf`);
    await writeFile(
      conf,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${name} 127.0.0.1 ${masterPort} 2`,
        `sentinel down-after-milliseconds ${name} 1000`,
        `sentinel failover-timeout ${name} 5000`,
        `sentinel parallel-syncs ${name} 1`,
        '',
      ].join('\n'),
    );
    const child = spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore', cwd: dir });
    children.set(port, child);
    await started(child, `sentinel on ${port}`);
  }
  const sentinels = sentinelPorts.map((port) => ({ host: '127.0.0.1', port }));
  const ask = async (port: number, ...args: string[]) => {
    const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
    try {
      await client.connect();
      return await client.call(...(args as [string, ...string[]]));
    } finally {
      client.disconnect();
    }
  };
  const synced = (port: number) =>
    until(
      async () => String(await ask(port, 'INFO', 'replication')).includes('master_link_status:up'),
      `the replica on ${port}`,
    );
  const sentinelsKnowReplica = () =>
    until(async () => {
      const infos = await Promise.all(
        sentinelPorts.map(async (p) => ({
          master: (await ask(p, 'SENTINEL', 'master', name)) as string[],
          replicas: (await ask(p, 'SENTINEL', 'replicas', name)) as string[][],
        })),
      );
      const field = (info: string[], k: string) => info[info.indexOf(k) + 1];
      // Every sentinel sees one replica, up (a killed node that rejoined is no longer s_down).
      return infos.every(
        ({ master, replicas }) =>
          field(master, 'num-other-sentinels') === '2' &&
          field(master, 'flags') === 'master' &&
          replicas.length === 1 &&
          field(replicas[0]!, 'flags') === 'slave',
      );
    }, 'the sentinels to know the replica and each other');
  const currentMasterPort = async () => {
    const addr = (await ask(sentinelPorts[0]!, 'SENTINEL', 'get-master-addr-by-name', name)) as string[];
    return Number(addr[1]);
  };
  // Ready once the replica has synced and every sentinel knows it and the others.
  await synced(replicaPort);
  await sentinelsKnowReplica();
  return {
    name,
    sentinels,
    sentinelList: sentinels.map((s) => `${s.host}:${s.port}`).join(','),
    masterPort,
    replicaPort,
    currentMasterPort,
    async kill(port) {
      const child = children.get(port);
      if (!child || child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    },
    pause(port) {
      children.get(port)?.kill('SIGSTOP');
    },
    resume(port) {
      children.get(port)?.kill('SIGCONT');
    },
    async rejoin(port) {
      const master = await currentMasterPort();
      await node(port, ['--replicaof', '127.0.0.1', String(master)]);
      await synced(port);
      await sentinelsKnowReplica();
    },
    async stop() {
      await Promise.all(
        [...children.values()].map(async (child) => {
          if (child.exitCode !== null || child.signalCode !== null) return;
          const exited = new Promise((r) => child.once('exit', r));
          child.kill('SIGKILL');
          await exited;
        }),
      );
      await rm(dir, { recursive: true, force: true });
    },
  };
}
