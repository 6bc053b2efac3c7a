import { Redis, type RedisOptions } from 'ioredis';
import { configError } from './config';

/**
 * Where a service's Redis is (docs/CONFIGURATION.md, "Every service"): one server named by
 * REDIS_URL, or a Sentinel deployment, where REDIS_SENTINELS lists the sentinels, REDIS_SENTINEL_NAME
 * names the master they watch, and REDIS_URL carries only the password and database. ioredis asks
 * the sentinels for the current master, and asks again after a failover.
 */
export interface RedisTarget {
  url: string;
  sentinels?: { host: string; port: number }[];
  sentinelName?: string;
  sentinelPassword?: string;
}

export interface RedisTargetConfig {
  REDIS_URL?: string;
  REDIS_SENTINELS?: string;
  REDIS_SENTINEL_NAME?: string;
  REDIS_SENTINEL_PASSWORD?: string;
}

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
 * Throws a one-line ConfigError for a Sentinel setting without the rest.
 */
export function redisTarget(config: RedisTargetConfig): RedisTarget | undefined {
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

/** A client for `target` with the caller's options (timeouts, queueing) on top. */
export function newRedis(target: RedisTarget | string, options: RedisOptions): Redis {
  const t = typeof target === 'string' ? { url: target } : target;
  if (!t.sentinels) return new Redis(t.url, options);
  return new Redis({
    ...credentialsOf(t.url),
    sentinels: t.sentinels,
    name: t.sentinelName,
    ...(t.sentinelPassword ? { sentinelPassword: t.sentinelPassword } : {}),
    ...options,
  });
}

/** One line for the start log: which topology, never a password. */
export function describeRedis(target: RedisTarget | string): string {
  const t = typeof target === 'string' ? { url: target } : target;
  const u = new URL(t.url);
  const db = u.pathname.replace(/^\//, '') || '0';
  if (!t.sentinels) return `single node ${u.hostname}:${u.port || 6379}/${db}`;
  const via = t.sentinels.map((s) => `${s.host}:${s.port}`).join(',');
  return `Sentinel master "${t.sentinelName}" via ${via}, database ${db}`;
}

/**
 * An ioredis connection for work on the request path (limits, Idempotency-Key records): while
 * disconnected or unresponsive, commands fail at once instead of queueing behind reconnects, so
 * each caller can answer promptly (the insurance limiter, or a 503). Auto-pipelining sends the
 * commands issued in one tick in one write.
 */
export function failFastRedis(target: string | RedisTarget): Redis {
  return newRedis(target, {
    enableAutoPipelining: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    // A connection that stops answering without closing must not stall requests either.
    commandTimeout: 1000,
    connectTimeout: 2000,
    // close() of a connection that is already gone should not wait for it.
    disconnectTimeout: 200,
    retryStrategy: (times) => Math.min(times * 100, 1000),
  });
}

/** Waits for the connection to be ready, at most `timeoutMs`; true when it is. */
export async function waitUntilReady(client: Redis, timeoutMs: number): Promise<boolean> {
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
