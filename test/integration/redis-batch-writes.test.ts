import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type { Redis } from 'ioredis';
import { failFastRedis } from '@mandate/shared/data';
import { REDIS_URL } from '../support/stack';

/**
 * The request path's Redis clients send the commands of one turn of the event loop in one write,
 * without ioredis's auto-pipelining (docs/DECISIONS.md, "What may outlive a request").
 */
describe('failFastRedis: one write per turn', () => {
  const key = `test:batch-writes:${randomUUID()}`;
  let client: Redis;

  beforeAll(async () => {
    client = failFastRedis(REDIS_URL) as Redis;
    if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
  });
  afterAll(async () => {
    await client.del(key);
    client.disconnect();
  });

  it('when 50 commands are issued in one turn, then they leave in one write, in order, each with its own answer, and no auto-pipeline is built', async () => {
    const socket = client.stream as Socket & {
      _write: (...a: unknown[]) => void;
      _writev: (...a: unknown[]) => void;
    };
    const calls = { write: 0, writev: 0, chunks: 0 };
    const { _write, _writev } = socket;
    socket._write = function (...a: unknown[]) {
      calls.write++;
      calls.chunks++;
      return _write.apply(this, a);
    };
    socket._writev = function (...a: unknown[]) {
      calls.writev++;
      calls.chunks += (a[0] as unknown[]).length;
      return _writev.apply(this, a);
    };
    try {
      const answers = Array.from({ length: 50 }, () => client.incr(key));
      expect(socket.writableCorked).toBe(1);
      expect(client.autoPipelineQueueSize).toBe(0);
      expect(await Promise.all(answers)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
      expect(calls).toEqual({ write: 0, writev: 1, chunks: 50 });
      expect(socket.writableCorked).toBe(0);
    } finally {
      socket._write = _write;
      socket._writev = _writev;
    }
  });

  it('when commands come in separate turns, then each turn has its own write', async () => {
    await client.set(key, '0');
    for (let turn = 1; turn <= 3; turn++) {
      expect(await client.incr(key)).toBe(turn);
      expect(client.stream.writableCorked).toBe(0);
    }
  });
});
