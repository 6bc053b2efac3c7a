import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { configError } from '../core/config';
import { redisTime } from './synced-clock';

/**
 * Where a service's Redis is (docs/CONFIGURATION.md, "Every service"): one server named by
 * REDIS_URL; a Sentinel deployment, where REDIS_SENTINELS lists the sentinels, REDIS_SENTINEL_NAME
 * names the master they watch, and REDIS_URL carries only the password and database (ioredis asks
 * the sentinels for the current master, and asks again after a failover); or a Redis Cluster, where
 * REDIS_CLUSTER_NODES lists some of its nodes and REDIS_URL carries only the password (ioredis learns
 * the other nodes and which slots each serves, and follows MOVED and ASK while slots move).
 */
export interface RedisTarget {
  url: string;
  sentinels?: { host: string; port: number }[];
  sentinelName?: string;
  sentinelPassword?: string;
  clusterNodes?: { host: string; port: number }[];
}

export interface RedisTargetConfig {
  REDIS_URL?: string;
  REDIS_SENTINELS?: string;
  REDIS_SENTINEL_NAME?: string;
  REDIS_SENTINEL_PASSWORD?: string;
  REDIS_CLUSTER_NODES?: string;
  REDIS_PREFIX?: string;
}

/**
 * A client of any topology. Code that sends a command through it names only keys of one hash slot
 * per command, Lua script or transaction (docs/DECISIONS.md, "Redis Cluster"); a command without a
 * key (PING, TIME, SCAN) goes to one node of a Cluster, not all of them.
 */
export type RedisClient = Redis | Cluster;

/** Whether `client` is a Redis Cluster client (its keys must share a slot per command). */
export const isCluster = (client: RedisClient): client is Cluster => client instanceof Cluster;

/** `host:port,host:port` as a list; throws naming the entry that is not one. */
export function parseHostPorts(list: string, variable: string): { host: string; port: number }[] {
  return list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      const m = /^(\[[0-9a-fA-F:]+\]|[^:\s]+):(\d{1,5})$/.exec(entry);
      const port = Number(m?.[2]);
      if (!m || port < 1 || port > 65_535) throw configError(variable, `"${entry}" is not host:port`);
      return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
    });
}

/**
 * The configured Redis, or undefined when REDIS_URL is unset (the in-memory adapters then serve).
 * Throws a one-line ConfigError for a Sentinel setting without the rest, and for a Cluster setting
 * that cannot work (with Sentinel, without REDIS_URL, another database, braces in REDIS_PREFIX).
 */
export function redisTarget(config: RedisTargetConfig): RedisTarget | undefined {
  if (config.REDIS_CLUSTER_NODES) return clusterTarget(config);
  if (config.REDIS_SENTINELS && !config.REDIS_URL)
    throw configError('REDIS_URL', 'is required with REDIS_SENTINELS (it carries the password and database)');
  if (config.REDIS_SENTINELS && !config.REDIS_SENTINEL_NAME)
    throw configError(
      'REDIS_SENTINEL_NAME',
      "is required with REDIS_SENTINELS: the master's name the sentinels watch",
    );
  if (!config.REDIS_URL) return undefined;
  if (!config.REDIS_SENTINELS) return { url: config.REDIS_URL };
  return {
    url: config.REDIS_URL,
    sentinels: parseHostPorts(config.REDIS_SENTINELS, 'REDIS_SENTINELS'),
    sentinelName: config.REDIS_SENTINEL_NAME,
    sentinelPassword: config.REDIS_SENTINEL_PASSWORD,
  };
}

/** REDIS_CLUSTER_NODES: never with Sentinel, and only database 0 (the only one a Cluster has). */
function clusterTarget(config: RedisTargetConfig): RedisTarget {
  if (config.REDIS_SENTINELS)
    throw configError('REDIS_CLUSTER_NODES', 'cannot be set together with REDIS_SENTINELS: choose one');
  if (!config.REDIS_URL)
    throw configError('REDIS_URL', 'is required with REDIS_CLUSTER_NODES (it carries the password)');
  const db = databaseOf(config.REDIS_URL);
  if (db !== '0') throw configError('REDIS_URL', `names database ${db}; a Redis Cluster has only database 0`);
  // The services' own hash tags must be the first braces in a key (docs/DECISIONS.md, "Redis Cluster").
  if (/[{}]/.test(config.REDIS_PREFIX ?? ''))
    throw configError('REDIS_PREFIX', 'must not contain { or } with REDIS_CLUSTER_NODES');
  return {
    url: config.REDIS_URL,
    clusterNodes: parseHostPorts(config.REDIS_CLUSTER_NODES!, 'REDIS_CLUSTER_NODES'),
  };
}

const databaseOf = (url: string) => new URL(url).pathname.replace(/^\//, '') || '0';

/** What REDIS_URL says beyond the server: the password, user, database and TLS. */
function credentialsOf(url: string): RedisOptions {
  const u = new URL(url);
  const db = Number(u.pathname.replace(/^\//, '') || 0);
  return {
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    db: Number.isInteger(db) ? db : 0,
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
  };
}

/**
 * A client for `target` with the caller's options (timeouts, queueing) on top. `batchWrites`: the
 * commands issued in one turn of the event loop leave in one write (`batchWritesPerTurn`; on a
 * Cluster, ioredis's auto-pipelining).
 */
export function newRedis(
  target: RedisTarget | string,
  options: RedisOptions,
  { batchWrites = false }: { batchWrites?: boolean } = {},
): RedisClient {
  const t = typeof target === 'string' ? { url: target } : target;
  if (t.clusterNodes)
    return newCluster(
      t.url,
      t.clusterNodes,
      batchWrites ? { ...options, enableAutoPipelining: true } : options,
    );
  const client = t.sentinels
    ? new Redis({
        ...credentialsOf(t.url),
        sentinels: t.sentinels,
        name: t.sentinelName,
        ...(t.sentinelPassword ? { sentinelPassword: t.sentinelPassword } : {}),
        ...options,
      })
    : new Redis(t.url, options);
  if (batchWrites) batchWritesPerTurn(client);
  return client;
}

/**
 * The commands `client` is given in one turn of the event loop leave in one write, as ioredis's
 * auto-pipelining sends them (so Redis reads and answers them together), without the Pipeline
 * object it builds per turn: that object's per-instance `length` getter gives it a map of its own
 * in the old generation, which kept every command and caller of its turn alive through the
 * scavenges until the next full collection (docs/PERFORMANCE.md, "Round 17: what each scavenge
 * copied (issue 35)"). The socket is corked
 * at a turn's first command and uncorked when the turn ends (setImmediate, where auto-pipelining
 * sends too).
 */
function batchWritesPerTurn(client: Redis): void {
  let corked = false;
  const send = client.sendCommand;
  client.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>) {
    const socket = this.stream;
    if (!corked && this.status === 'ready' && socket?.writable) {
      corked = true;
      socket.cork();
      setImmediate(() => {
        corked = false;
        socket.uncork();
      });
    }
    return send.apply(this, args);
  };
}

/**
 * A Cluster client with the caller's options: the client-wide ones (queueing, auto-pipelining,
 * lazy connect, reconnecting) on the Cluster, the rest (timeouts, retries per command, password) on
 * each node's connection. Redirections (MOVED, ASK: a slot moving) are followed whatever the
 * options; a node that is gone is retried after 100 ms at most a few times, so a fail-fast client
 * still answers within a few command timeouts.
 */
function newCluster(url: string, nodes: { host: string; port: number }[], options: RedisOptions): Cluster {
  const { enableOfflineQueue, enableAutoPipelining, lazyConnect, retryStrategy, ...perNode } = options;
  const { db: _db, ...credentials } = credentialsOf(url);
  return new Cluster(nodes, {
    ...(enableOfflineQueue !== undefined ? { enableOfflineQueue } : {}),
    ...(enableAutoPipelining !== undefined ? { enableAutoPipelining } : {}),
    ...(lazyConnect !== undefined ? { lazyConnect } : {}),
    ...(retryStrategy ? { clusterRetryStrategy: (times: number) => retryStrategy(times) } : {}),
    maxRedirections: 6,
    redisOptions: { ...credentials, ...perNode },
  });
}

/** One line for the start log: which topology, never a password. */
export function describeRedis(target: RedisTarget | string): string {
  const t = typeof target === 'string' ? { url: target } : target;
  if (t.clusterNodes)
    return `Redis Cluster via ${t.clusterNodes.map((n) => `${n.host}:${n.port}`).join(',')}`;
  const u = new URL(t.url);
  const db = databaseOf(t.url);
  if (!t.sentinels) return `single node ${u.hostname}:${u.port || 6379}/${db}`;
  const via = t.sentinels.map((s) => `${s.host}:${s.port}`).join(',');
  return `Sentinel master "${t.sentinelName}" via ${via}, database ${db}`;
}

/**
 * An ioredis connection for work on the request path (limits, Idempotency-Key records): while
 * disconnected or unresponsive, commands fail at once instead of queueing behind reconnects, so
 * each caller can answer promptly (the insurance limiter, or a 503). The commands issued in one
 * turn of the event loop leave in one write (`batchWrites`).
 */
export function failFastRedis(target: string | RedisTarget): RedisClient {
  return newRedis(
    target,
    {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      // A connection that stops answering without closing must not stall requests either.
      commandTimeout: 1000,
      connectTimeout: 2000,
      // close() of a connection that is already gone should not wait for it.
      disconnectTimeout: 200,
      retryStrategy: (times) => Math.min(times * 100, 1000),
    },
    { batchWrites: true },
  );
}

const TIME_LUA = "return redis.call('TIME')";

/**
 * Redis's clock (docs/DECISIONS.md, "Time"), epoch milliseconds. On a Cluster, `TIME` alone would
 * go to any node, each with its own host clock; a script naming `key` runs on the master serving
 * its slot, so every process that passes the same key reads the same master's clock.
 */
export function redisClock(client: RedisClient, key: string): Promise<number> {
  if (!isCluster(client)) return redisTime(client);
  return redisTime({ time: () => client.eval(TIME_LUA, 1, key) as Promise<string[]> });
}

/** Waits for the connection to be ready, at most `timeoutMs`; true when it is. */
export async function waitUntilReady(client: RedisClient, timeoutMs: number): Promise<boolean> {
  if (client.status === 'ready') return true;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(done, timeoutMs);
    client.once('ready', done);
    function done() {
      clearTimeout(timer);
      client.off('ready', done);
      resolve();
    }
  });
  return (client.status as string) === 'ready';
}

/** How long a write waits for a replica's acknowledgement before it is refused (docs/DECISIONS.md, "Redis failover"). */
export const REPLICA_ACK_TIMEOUT_MS = 500;

/** No replica acknowledged the write within the bound: it may be lost in a failover, so it must not be relied on. */
export class ReplicaNotAcknowledged extends Error {
  constructor(timeoutMs: number) {
    super(`no Redis replica acknowledged the write within ${timeoutMs} ms`);
    this.name = 'ReplicaNotAcknowledged';
  }
}

/**
 * Waits until a replica of the node serving `key` holds every write this client has sent that node,
 * at most `timeoutMs` (docs/DECISIONS.md, "Redis failover"): `WAIT 1`, sent with a command on `key`
 * so that on a Cluster it goes over that master's connection. Whether a replica must hold it depends
 * on what a failover could promote:
 * - one plain server: only the replicas connected now (`ROLE`); with none, nothing is waited for;
 * - a Cluster master: the replicas the Cluster knows for it and does not hold failed (`CLUSTER
 *   NODES`); with none (a master without replica), nothing is waited for;
 * - Sentinel: always one, as the sentinels may promote a replica that is disconnected right now.
 * A replica must hold it and none is connected: refused at once, never a wait for the whole bound.
 * Answers the number of replicas that acknowledged (0: none needed); throws ReplicaNotAcknowledged
 * when none did in time.
 */
export async function awaitReplica(
  client: RedisClient,
  key: string,
  timeoutMs = REPLICA_ACK_TIMEOUT_MS,
): Promise<number> {
  const cluster = isCluster(client);
  const [, role, nodes] = await onNodeOf(
    client,
    key,
    cluster ? [['ROLE'], ['CLUSTER', 'NODES']] : [['ROLE']],
  );
  const connected =
    Array.isArray(role) && role[0] === 'master' && Array.isArray(role[2]) ? role[2].length : 0;
  const needed = cluster
    ? promotableReplicas(String(nodes)) > 0
    : Boolean((client as Redis).options.sentinels?.length) || connected > 0;
  if (!needed) return 0;
  if (connected === 0) throw new ReplicaNotAcknowledged(timeoutMs);
  const [, acked] = await onNodeOf(client, key, [['WAIT', '1', String(timeoutMs)]]);
  if (Number(acked) < 1) throw new ReplicaNotAcknowledged(timeoutMs);
  return Number(acked);
}

/** In `CLUSTER NODES` of a master: its replicas not flagged as failed (`<id> <addr> <flags> <master id> …`). */
function promotableReplicas(nodes: string): number {
  const lines = nodes.split('\n').map((l) => l.split(' '));
  const myself = lines.find((f) => f[2]?.split(',').includes('myself'))?.[0];
  return lines.filter((f) => f[3] === myself && !/fail|noaddr/.test(f[2] ?? '')).length;
}

/** Keyless `commands` in one pipeline after `EXISTS key`: all on the connection of `key`'s node. */
async function onNodeOf(
  client: RedisClient,
  key: string,
  commands: [string, ...string[]][],
): Promise<unknown[]> {
  const pipeline = client.pipeline().exists(key);
  for (const command of commands) pipeline.call(...command);
  const results = (await pipeline.exec()) as [Error | null, unknown][] | null;
  if (!results) throw new Error(`${commands[0]![0]} was not answered`);
  for (const [err] of results) if (err) throw err;
  return results.map(([, value]) => value);
}
