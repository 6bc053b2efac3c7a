import Redis from 'ioredis';
import { startTcpProxy, type TcpProxy } from './tcp-proxy';

/**
 * A TCP proxy in front of the real Redis that decodes every command its clients send (RESP arrays
 * of bulk strings, what ioredis writes), so a test can point services at it and see each command
 * they ran, whichever connection or library sent it.
 */
export interface RedisTap {
  /** redis://127.0.0.1:<port>, for REDIS_URL. */
  url: string;
  /** Every command decoded so far, in arrival order per connection: [name, ...args]. */
  commands: string[][];
  close(): Promise<void>;
}

export async function startRedisTap(redisUrl: string): Promise<RedisTap> {
  const target = new URL(redisUrl);
  const commands: string[][] = [];
  const pending = new Map<number, Buffer>();
  const proxy: TcpProxy = await startTcpProxy(target.hostname, Number(target.port || 6379), {
    tap(connection, chunk) {
      let buffer = Buffer.concat([pending.get(connection) ?? Buffer.alloc(0), chunk]);
      for (;;) {
        const decoded = decodeCommand(buffer);
        if (!decoded) break;
        commands.push(decoded.command);
        buffer = buffer.subarray(decoded.length);
      }
      pending.set(connection, buffer);
    },
  });
  return { url: `redis://127.0.0.1:${proxy.port}${target.pathname}`, commands, close: () => proxy.close() };
}

/** One `*N\r\n($len\r\n<bytes>\r\n)×N` command from the start of `buffer`, or undefined while incomplete. */
function decodeCommand(buffer: Buffer): { command: string[]; length: number } | undefined {
  const line = (from: number) => {
    const end = buffer.indexOf('\r\n', from);
    return end < 0 ? undefined : { text: buffer.toString('latin1', from, end), next: end + 2 };
  };
  const head = line(0);
  if (!head) return undefined;
  if (!head.text.startsWith('*')) throw new Error(`not a RESP array: ${head.text.slice(0, 40)}`);
  const count = Number(head.text.slice(1));
  const command: string[] = [];
  let at = head.next;
  for (let i = 0; i < count; i++) {
    const size = line(at);
    if (!size) return undefined;
    if (!size.text.startsWith('$')) throw new Error(`not a RESP bulk string: ${size.text.slice(0, 40)}`);
    const n = Number(size.text.slice(1));
    if (buffer.length < size.next + n + 2) return undefined;
    command.push(buffer.toString('utf8', size.next, size.next + n));
    at = size.next + n + 2;
  }
  return { command, length: at };
}

/** Commands that name no key (connection set-up, scripts, SCAN); any other command must name its keys. */
const KEYLESS = new Set([
  'info',
  'client',
  'select',
  'ping',
  'hello',
  'auth',
  'script',
  'quit',
  'command',
  'scan',
  // The clock sync of mandates and verify (docs/DECISIONS.md, "Time").
  'time',
  // The replica check before a lifecycle call or an Idempotency-Key record answers
  // (docs/DECISIONS.md, "Redis failover"); `CLUSTER NODES` only on a Cluster.
  'role',
  'wait',
  'cluster',
]);

/**
 * The keys each command touches, as Redis itself reads them (`COMMAND GETKEYS`, which knows every
 * command's key positions, EVAL/EVALSHA's numkeys included), and SCAN's MATCH patterns; throws on a
 * command that is neither keyed nor known to be keyless, so nothing escapes the check unseen.
 */
export async function keysOf(
  redisUrl: string,
  commands: string[][],
): Promise<{ keys: Set<string>; patterns: Set<string> }> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  const keys = new Set<string>();
  const patterns = new Set<string>();
  try {
    await redis.connect();
    for (const [name, ...args] of commands) {
      const lower = name!.toLowerCase();
      if (lower === 'scan') {
        const match = args.findIndex((a) => a.toLowerCase() === 'match');
        patterns.add(match >= 0 ? args[match + 1]! : '*');
        continue;
      }
      if (KEYLESS.has(lower)) continue;
      const found = (await redis.call('COMMAND', 'GETKEYS', name!, ...args)) as string[];
      for (const key of found) keys.add(key);
    }
  } finally {
    redis.disconnect();
  }
  return { keys, patterns };
}
