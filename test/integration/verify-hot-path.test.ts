import { newId } from '@mandate/shared/core';
import { callService, callerFor } from '@mandate/shared/testing';
import { eventually } from '../support/eventually';
import { startSnapshotWorld, type SnapshotWorld } from './snapshot-support';

/**
 * Issue 5 §4, counted rather than read from the code: with a warm snapshot, a verify costs the
 * mandates service nothing (no store read — the only way to MongoDB — and no signature — the only
 * way to KMS) and its event reaches the broker in batches. Real Redis and RabbitMQ.
 */
describe('verify hot path (real Redis and RabbitMQ)', () => {
  let world: SnapshotWorld;

  beforeAll(async () => {
    world = await startSnapshotWorld({ amqp: true });
  });
  afterAll(async () => {
    await world?.close();
  });

  it('when the snapshot is warm, then N verifies read the mandates service 0 times, sign nothing and publish in fewer broker calls than verifies', async () => {
    const tenantId = newId('tnt');
    const created = await callService(world.mandatesUrl, 'POST', '/v1/mandates', {
      caller: callerFor(tenantId),
      body: { principal: 'user_alice', delegate: 'agent_bob', scope: { actions: ['payments:*'] } },
    });
    expect(created.status).toBe(201);
    const { url, metrics } = world.verifies[0]!;

    const storeGets = world.store.gets;
    const signs = world.signs.count;
    const mandatesReads = metrics.mandatesReads;
    const N = 200;
    const answers = await Promise.all(
      Array.from({ length: N }, () =>
        callService(url, 'POST', '/v1/verify', {
          caller: callerFor(tenantId),
          body: { mandate_id: created.body.id, action: 'payments:create' },
        }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(N).fill(200));
    expect(answers.every((a) => a.body.decision === 'ALLOW' && a.body.mandate_version === 1)).toBe(true);

    // Every verify counted its event when it answered; the batches reach the broker after.
    await eventually(
      () => (metrics.brokerPublishes > 0 ? true : undefined),
      30_000,
      'a batch to reach the broker',
      20,
    );

    expect({
      mandatesReads: metrics.mandatesReads - mandatesReads,
      storeGets: world.store.gets - storeGets,
      signs: world.signs.count - signs,
      snapshotHitsAtLeastN: metrics.snapshotHits >= N,
    }).toEqual({ mandatesReads: 0, storeGets: 0, signs: 0, snapshotHitsAtLeastN: true });
    expect(metrics.eventsPublished).toBeGreaterThanOrEqual(N);
    expect(metrics.brokerPublishes).toBeGreaterThan(0);
    expect(metrics.brokerPublishes).toBeLessThan(N);
  });

  it('when a mandate has no snapshot yet, then the first verify reads the mandates service once and the next ones hit the snapshot it refilled', async () => {
    const tenantId = newId('tnt');
    const created = await callService(world.mandatesUrl, 'POST', '/v1/mandates', {
      caller: callerFor(tenantId),
      body: { principal: 'user_alice', delegate: 'agent_bob' },
    });
    // Forget the snapshot the create wrote: a cold cache.
    await world.redis.del(`${world.prefix}${tenantId}:${created.body.id}`);
    const { url, metrics } = world.verifies[0]!;
    const before = { reads: metrics.mandatesReads, hits: metrics.snapshotHits };
    const verify = () =>
      callService(url, 'POST', '/v1/verify', {
        caller: callerFor(tenantId),
        body: { mandate_id: created.body.id, action: 'x' },
      });
    expect((await verify()).body).toMatchObject({ decision: 'ALLOW', mandate_version: 1 });
    for (let i = 0; i < 5; i++) await verify();
    expect({ reads: metrics.mandatesReads - before.reads, hits: metrics.snapshotHits - before.hits }).toEqual(
      { reads: 1, hits: 5 },
    );
  });

  it('when the internal metrics route is called, then it answers the counters (and 401 without a token)', async () => {
    const { url } = world.verifies[0]!;
    const res = await callService(url, 'GET', '/internal/v1/metrics', { caller: callerFor('tnt_x') });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(
      [
        'broker_publishes',
        'events_published',
        'mandates_reads',
        'snapshot_errors',
        'snapshot_mac_failures',
        'snapshot_hits',
        'snapshot_misses',
        'verifications',
      ].sort(),
    );
    expect((await callService(url, 'GET', '/internal/v1/metrics', { caller: null })).status).toBe(401);
  });
});
