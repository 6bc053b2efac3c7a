import type { Connection } from 'mongoose';
import { newId } from '@mandate/shared/core';
import { MONGO_TARGET, describeIfAvailable, mongoAdapter, mongoSkipReason } from '@mandate/shared/testing';
import { MemoryWebhookStore } from '../src/webhooks/memory-webhook-store';
import { MongoWebhookStore } from '../src/webhooks/mongo-webhook-store';
import type { WebhookDelivery } from '../src/webhooks/webhook';
import type { AttemptOutcome, WebhookStore } from '../src/webhooks/webhook-store';
import { buildDelivery } from './factories';

/**
 * A finished delivery is kept for the retention after its last attempt, then removed; a PENDING
 * one never is (docs/WEBHOOKS.md). Memory removes on its next write, MongoDB by a TTL index on
 * `expires_at`, whose monitor runs about once a minute: that half checks the field and the index.
 */
const RETENTION_MS = 60_000;
// Now, not a fixed date: a real MongoDB (and the stand-in) removes a document whose expires_at has passed.
const T0 = Math.floor(Date.now() / 1_000) * 1_000;
const at = (ms: number) => new Date(T0 + ms).toISOString();

const delivery = (endpointId: string, tenantId: string) => buildDelivery(tenantId, endpointId, at(0));

const outcome = (status: AttemptOutcome['status'], attemptedAt: string): AttemptOutcome => ({
  attempt: {
    attempted_at: attemptedAt,
    status_code: status === 'SUCCEEDED' ? 200 : 500,
    error: status === 'SUCCEEDED' ? null : 'HTTP 500',
    duration_ms: 5,
    response_body: null,
    manual: false,
  },
  status,
  next_attempt_at: status === 'PENDING' ? at(RETENTION_MS * 10) : null,
  scheduled: true,
});

/** Inserts `d`, leases it and records one attempt ending in `status` at `ms`. */
async function attempt(
  store: WebhookStore,
  d: WebhookDelivery,
  status: AttemptOutcome['status'],
  ms: number,
) {
  await store.insertDeliveries([d]);
  const lease = await store.claimOne(d, new Date(T0 + ms), new Date(T0 + ms + 30_000));
  expect(lease).not.toBeNull();
  return store.finishAttempt(lease!, outcome(status, at(ms)), at(ms));
}

describe('webhook delivery retention — memory store', () => {
  const tenant = newId('tnt');
  const endpoint = newId('whe');

  it('when the retention has passed since a delivery finished, then it is gone; a PENDING one and a recently retried one stay', async () => {
    const store = new MemoryWebhookStore(RETENTION_MS);
    const succeeded = delivery(endpoint, tenant);
    const failed = delivery(endpoint, tenant);
    const pending = delivery(endpoint, tenant);
    const retried = delivery(endpoint, tenant);
    await attempt(store, succeeded, 'SUCCEEDED', 0);
    await attempt(store, failed, 'FAILED', 1_000);
    await attempt(store, pending, 'PENDING', 0);
    await attempt(store, retried, 'FAILED', 0);
    // Retried by hand later: its retention starts again from this attempt.
    const again = await store.claimOne(retried, new Date(T0 + 50_000), new Date(T0 + 80_000));
    await store.finishAttempt(again!, outcome('FAILED', at(50_000)), at(50_000));

    // Just before the first one's end nothing has gone.
    await attempt(store, delivery(endpoint, tenant), 'SUCCEEDED', RETENTION_MS - 1);
    expect(await store.getDelivery(tenant, endpoint, succeeded.id)).not.toBeNull();

    await attempt(store, delivery(endpoint, tenant), 'SUCCEEDED', RETENTION_MS + 1_000);
    expect(await store.getDelivery(tenant, endpoint, succeeded.id)).toBeNull();
    expect(await store.getDelivery(tenant, endpoint, failed.id)).toBeNull();
    expect(await store.getDelivery(tenant, endpoint, pending.id)).toMatchObject({ status: 'PENDING' });
    expect(await store.getDelivery(tenant, endpoint, retried.id)).toMatchObject({ status: 'FAILED' });
    const listed = await store.listDeliveries(tenant, endpoint, { limit: 10 });
    expect(listed.map((d) => d.id)).not.toContain(succeeded.id);
    expect(listed.map((d) => d.id)).toContain(pending.id);
  });
});

describeIfAvailable(
  !mongoSkipReason,
  `webhook delivery retention — mongo store on ${MONGO_TARGET}`,
  mongoSkipReason ?? '',
  () => {
    let connection: Connection;
    let store: WebhookStore;
    let close: () => Promise<void>;
    const tenant = newId('tnt');
    const endpoint = newId('whe');

    beforeAll(async () => {
      const opened = await mongoAdapter<WebhookStore>('webhook_retention', async (c) => {
        connection = c;
        const s = new MongoWebhookStore(c, RETENTION_MS);
        await s.init();
        return s;
      }).create();
      store = opened.store;
      close = opened.close;
    });
    afterAll(async () => {
      await close?.();
    });

    const stored = (id: string) =>
      connection
        .collection<{ _id: string; expires_at: Date | null }>('webhook_deliveries')
        .findOne({ _id: id });

    it('when a delivery finishes, then expires_at is its last attempt plus the retention; while PENDING it is null', async () => {
      const succeeded = delivery(endpoint, tenant);
      const pending = delivery(endpoint, tenant);
      await attempt(store, succeeded, 'SUCCEEDED', 2_000);
      await attempt(store, pending, 'PENDING', 2_000);
      expect((await stored(succeeded.id))?.expires_at).toEqual(new Date(T0 + 2_000 + RETENTION_MS));
      expect((await stored(pending.id))?.expires_at).toBeNull();
      // A PENDING outcome after a finished one (a manual retry that failed on a pending schedule) clears it.
      const lease = await store.claimOne(succeeded, new Date(T0 + 9_000), new Date(T0 + 39_000));
      await store.finishAttempt(lease!, outcome('PENDING', at(9_000)), at(9_000));
      expect((await stored(succeeded.id))?.expires_at).toBeNull();
    });

    it('when the store starts, then the deliveries carry a TTL index on expires_at that removes them at that instant', async () => {
      const indexes = await connection.collection('webhook_deliveries').indexes();
      expect(indexes.find((i) => i.key.expires_at === 1)).toMatchObject({ expireAfterSeconds: 0 });
    });
  },
);
