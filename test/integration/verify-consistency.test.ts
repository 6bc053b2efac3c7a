import { newId } from '@mandate/shared/core';
import { callService, callerFor, testSnapshotMac } from '@mandate/shared/testing';
import { RedisSnapshots } from '@mandate/mandates/testing';
import { startTcpProxy } from '../support/tcp-proxy';
import {
  REDIS_URL,
  expectNoStaleDecision,
  silent,
  startSnapshotWorld,
  type SnapshotWorld,
} from './snapshot-support';

/**
 * Issue 5 §1: once suspend, revoke or reactivate has returned, no verify on any replica answers
 * from an older version. Many verifies in flight on two verify replicas while lifecycle calls run,
 * against the real Redis; every verify sent after a lifecycle response must carry that version or
 * a newer one.
 */
describe('no stale decision after a lifecycle call (two verify replicas, real Redis)', () => {
  let world: SnapshotWorld;

  beforeAll(async () => {
    world = await startSnapshotWorld({ replicas: 2 });
  });
  afterAll(async () => {
    await world?.close();
  });

  /** A caller of a new tenant, and the id of a mandate it created (principal a, delegate b). */
  async function newTenantMandate() {
    const tenantId = newId('tnt');
    const caller = callerFor(tenantId);
    const created = await callService(world.mandatesUrl, 'POST', '/v1/mandates', {
      caller,
      body: { principal: 'a', delegate: 'b' },
    });
    return { tenantId, caller, mandateId: created.body.id as string };
  }

  it(
    'when verifies run concurrently with suspend/reactivate/revoke, then none sent after a lifecycle response carries an older mandate_version, and none after the revoke is an ALLOW',
    () => expectNoStaleDecision(world),
    60_000,
  );

  it('when the real Redis is cut away from the mandates service, then a lifecycle call answers 503 and changes nothing, and works again once Redis is back', async () => {
    const { caller, mandateId } = await newTenantMandate();
    // The mandates service's own Redis client (as its wiring connects it), through a proxy this test cuts.
    const redis = new URL(REDIS_URL);
    const proxy = await startTcpProxy(redis.hostname, Number(redis.port || 6379));
    const through = new URL(REDIS_URL);
    through.hostname = '127.0.0.1';
    through.port = String(proxy.port);
    const snapshots = await RedisSnapshots.connect(through.toString(), silent, {
      mac: testSnapshotMac,
      prefix: world.prefix,
    });
    const original = world.mandatesDeps.snapshots;
    world.mandatesDeps.snapshots = snapshots;
    const lifecycle = (op: string) =>
      callService(world.mandatesUrl, 'POST', `/v1/mandates/${mandateId}/${op}`, { caller });
    const read = async () =>
      (await callService(world.mandatesUrl, 'GET', `/v1/mandates/${mandateId}`, { caller })).body;
    try {
      // Through the proxy the fence and the snapshot work: the cut below is what fails.
      expect((await lifecycle('suspend')).body).toMatchObject({ state: 'SUSPENDED', version: 2 });
      proxy.cut();
      const res = await lifecycle('revoke');
      expect({ status: res.status, body: res.body }).toEqual({
        status: 503,
        body: {
          error: 'SERVICE_UNAVAILABLE',
          message: 'Mandate snapshot store unavailable; nothing was changed',
        },
      });
      expect(await read()).toMatchObject({ state: 'SUSPENDED', version: 2 });
      expect(
        world.events.filter((e) => e.type === 'MANDATE_REVOKED' && e.resource?.id === mandateId),
      ).toEqual([]);

      // Redis back: the client reconnects and the same call goes through.
      proxy.restore();
      const deadline = Date.now() + 10_000;
      let again = await lifecycle('revoke');
      while (again.status === 503 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
        again = await lifecycle('revoke');
      }
      expect({ status: again.status, state: again.body.state }).toEqual({ status: 200, state: 'REVOKED' });
      expect(await read()).toMatchObject({ state: 'REVOKED', version: 3 });
    } finally {
      world.mandatesDeps.snapshots = original;
      await snapshots.close();
      await proxy.close();
    }
  });

  it('when the snapshot write after a commit fails, then the fence already hides the old snapshot and verify answers from the new version', async () => {
    const { caller, mandateId } = await newTenantMandate();
    const verify = () =>
      callService(world.verifies[0]!.url, 'POST', '/v1/verify', {
        caller,
        body: { mandate_id: mandateId, action: 'x' },
      });
    expect((await verify()).body).toMatchObject({ decision: 'ALLOW', mandate_version: 1 });

    const snapshots = world.mandatesDeps.snapshots!;
    const write = snapshots.write;
    // Only the write right after the commit fails; the refill on verify's miss works again.
    let failNext = true;
    snapshots.write = async (m) => {
      if (failNext) {
        failNext = false;
        throw new Error('redis went away');
      }
      return write.call(snapshots, m);
    };
    try {
      const revoked = await callService(world.mandatesUrl, 'POST', `/v1/mandates/${mandateId}/revoke`, {
        caller,
      });
      expect(revoked.status).toBe(200);
      expect((await verify()).body).toMatchObject({
        decision: 'DENY',
        reason: 'MANDATE_REVOKED',
        mandate_version: 2,
      });
    } finally {
      snapshots.write = write;
    }
  });

  it('when an ACTIVE snapshot is forged by a direct Redis write over a revoked mandate, then verify ignores it, reads through and answers DENY', async () => {
    const { tenantId, caller, mandateId } = await newTenantMandate();
    const revoked = await callService(world.mandatesUrl, 'POST', `/v1/mandates/${mandateId}/revoke`, {
      caller,
    });
    expect(revoked.body).toMatchObject({ state: 'REVOKED', version: 2 });
    const replica = world.verifies[0]!;
    const verify = () =>
      callService(replica.url, 'POST', '/v1/verify', {
        caller,
        body: { mandate_id: mandateId, action: 'x' },
      });
    // The genuine snapshot is in place and used: the forgery below replaces a working one.
    expect((await verify()).body).toMatchObject({ decision: 'DENY', reason: 'MANDATE_REVOKED' });

    const key = `${world.prefix}${tenantId}:${mandateId}`;
    const forged = JSON.stringify({ ...revoked.body, state: 'ACTIVE', version: 3 });
    const before = { ...replica.metrics };
    // A forged MAC, then none at all: both are ignored.
    await world.redis.hset(key, 'v', '3', 'min', '0', 'm', forged, 's', 'A'.repeat(43));
    expect((await verify()).body).toMatchObject({
      decision: 'DENY',
      reason: 'MANDATE_REVOKED',
      mandate_version: 2,
    });
    await world.redis.hdel(key, 's');
    expect((await verify()).body).toMatchObject({
      decision: 'DENY',
      reason: 'MANDATE_REVOKED',
      mandate_version: 2,
    });

    expect({
      macFailures: replica.metrics.snapshotMacFailures - before.snapshotMacFailures,
      mandatesReads: replica.metrics.mandatesReads - before.mandatesReads,
      snapshotHits: replica.metrics.snapshotHits - before.snapshotHits,
    }).toEqual({ macFailures: 2, mandatesReads: 2, snapshotHits: 0 });
  });
});
