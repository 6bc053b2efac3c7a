import type { Redis } from 'ioredis';
import { newRedis, type RedisTarget } from '@mandate/shared';

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
