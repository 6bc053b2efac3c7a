import { spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import {
  ReplicaNotAcknowledged,
  awaitReplica,
  describeRedis,
  failFastRedis,
  redisTarget,
  waitUntilReady,
  type RedisTarget,
} from '@mandate/shared/data';
import { startSentinelDeployment, type SentinelDeployment } from '../support/redis-sentinel';
import { createTenant, eventually, freePort, revokeThenVerify, startStack } from '../support/stack';

/**
 * Redis through Sentinel (docs/CONFIGURATION.md, "Every service"): the services' own client
 * options over a real master, replica and three sentinels on private ports. After the master is
 * SIGKILLed, commands fail at once (never hang) while no master is known, and succeed against the
 * promoted replica within 10 s of the promotion.
 */
describe('Redis through Sentinel (real redis-server nodes and sentinels)', () => {
  let deployment: SentinelDeployment;
  let target: RedisTarget;

  beforeAll(async () => {
    deployment = await startSentinelDeployment();
    target = redisTarget({
      REDIS_URL: 'redis://sentinel-ignored/0',
      REDIS_SENTINELS: deployment.sentinelList,
      REDIS_SENTINEL_NAME: deployment.name,
    })!;
  }, 60_000);

  afterAll(async () => {
    await deployment?.stop();
  });

  it('when REDIS_SENTINELS is set, then the start line names the topology and a Sentinel setting without its name is one config error', () => {
    expect(describeRedis(target)).toBe(
      `Sentinel master "${deployment.name}" via ${deployment.sentinelList}, database 0`,
    );
    expect(describeRedis('redis://:secret@127.0.0.1:6379/2')).toBe('single node 127.0.0.1:6379/2');
    expect(() => redisTarget({ REDIS_URL: 'redis://x/0', REDIS_SENTINELS: deployment.sentinelList })).toThrow(
      "REDIS_SENTINEL_NAME: is required with REDIS_SENTINELS: the master's name the sentinels watch",
    );
    expect(() => redisTarget({ REDIS_SENTINELS: deployment.sentinelList, REDIS_SENTINEL_NAME: 'm' })).toThrow(
      'REDIS_URL: is required with REDIS_SENTINELS',
    );
    expect(() =>
      redisTarget({ REDIS_URL: 'redis://x/0', REDIS_SENTINELS: 'a:1,b', REDIS_SENTINEL_NAME: 'm' }),
    ).toThrow('REDIS_SENTINELS: "b" is not host:port');
  });

  it('when the five processes run on the Sentinel deployment, then the snapshots live in its master and a revoke is seen by the next verify', async () => {
    const stack = await startStack({
      all: {
        REDIS_URL: 'redis://sentinel-ignored/0',
        REDIS_SENTINELS: deployment.sentinelList,
        REDIS_SENTINEL_NAME: deployment.name,
      },
    });
    try {
      const { auth } = await createTenant(stack, { name: 'Sentinel', plan: 'enterprise' });
      expect(await revokeThenVerify(stack, auth)).toEqual({
        created: 201,
        before: 'ALLOW OK',
        revoked: 200,
        after: 'DENY MANDATE_REVOKED',
      });
      // The snapshot verify answered from is in the Sentinel's master, not in the shared Redis.
      const master = new Redis({ port: await deployment.currentMasterPort(), host: '127.0.0.1' });
      try {
        expect(await master.keys(`${stack.redisPrefix}snapshot:*`)).toHaveLength(1);
      } finally {
        master.disconnect();
      }
    } finally {
      await stack.stop();
    }
  }, 180_000);

  it('when a node has no replica, then awaitReplica answers 0 at once; under Sentinel it waits for the replica, and with none connected it is refused at once', async () => {
    // One plain server: nothing a failover could promote, nothing to wait for, no WAIT blocking.
    const port = await freePort();
    const lone = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', ''], {
      stdio: 'ignore',
    });
    // Connects once the server listens (retrying meanwhile, commands queued).
    const plain = new Redis({ port, host: '127.0.0.1', retryStrategy: () => 50 });
    plain.on('error', () => undefined);
    try {
      expect(await plain.ping()).toBe('PONG');
      await plain.set('wait-test:k', 'v');
      let started = Date.now();
      expect(await awaitReplica(plain, 'wait-test:k')).toBe(0);
      expect(Date.now() - started).toBeLessThan(250);

      const client = failFastRedis(target);
      client.on('error', () => undefined);
      const master = new Redis({ port: await deployment.currentMasterPort(), host: '127.0.0.1' });
      const replica =
        (await deployment.currentMasterPort()) === deployment.masterPort
          ? deployment.replicaPort
          : deployment.masterPort;
      try {
        expect(await waitUntilReady(client, 10_000)).toBe(true);
        await client.set('wait-test:k', 'v');
        expect(await awaitReplica(client, 'wait-test:k')).toBe(1);
        // The replica's link dropped (and it cannot come back while stopped): refused without waiting.
        deployment.pause(replica);
        try {
          await master.call('CLIENT', 'KILL', 'TYPE', 'replica');
          started = Date.now();
          await client.set('wait-test:k', 'w');
          await expect(awaitReplica(client, 'wait-test:k')).rejects.toThrow(ReplicaNotAcknowledged);
          expect(Date.now() - started).toBeLessThan(250);
        } finally {
          deployment.resume(replica);
        }
        // Back: acknowledged again once the replica has resynchronised.
        await eventually(
          () =>
            awaitReplica(client, 'wait-test:k').then(
              (n) => (n === 1 ? n : undefined),
              () => undefined,
            ),
          20_000,
          'the replica back',
        );
        await client.del('wait-test:k');
      } finally {
        client.disconnect();
        master.disconnect();
      }
    } finally {
      plain.disconnect();
      const exited = new Promise((r) => lone.once('exit', r));
      lone.kill('SIGKILL');
      await exited;
    }
  }, 60_000);

  it('when the master is SIGKILLed, then commands fail fast during the failover and succeed on the promoted replica within 10 s of the promotion', async () => {
    const client = failFastRedis(target);
    client.on('error', () => undefined);
    try {
      expect(await waitUntilReady(client, 10_000)).toBe(true);
      await client.set('sentinel-test:k', 'before');
      expect(await client.get('sentinel-test:k')).toBe('before');

      const oldMaster = await deployment.currentMasterPort();
      await deployment.kill(oldMaster);
      let slowest = 0;
      let promotedAt: number | undefined;
      const deadline = Date.now() + 45_000;
      let wroteAfter: number | undefined;
      while (Date.now() < deadline && wroteAfter === undefined) {
        if (
          promotedAt === undefined &&
          (await deployment.currentMasterPort().catch(() => oldMaster)) !== oldMaster
        )
          promotedAt = Date.now();
        const sent = Date.now();
        try {
          await client.set('sentinel-test:k', 'after');
          if (promotedAt !== undefined) wroteAfter = Date.now();
        } catch {
          // No master yet: refused at once, never queued behind the reconnect.
        }
        slowest = Math.max(slowest, Date.now() - sent);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(promotedAt).toBeDefined();
      expect(wroteAfter).toBeDefined();
      expect(wroteAfter! - promotedAt!).toBeLessThan(10_000);
      // commandTimeout (1 s) bounds every command, with room for a loaded machine.
      expect(slowest).toBeLessThan(3_000);
      expect(await deployment.currentMasterPort()).toBe(deployment.replicaPort);
      expect(await client.get('sentinel-test:k')).toBe('after');
    } finally {
      client.disconnect();
    }
  }, 90_000);
});
