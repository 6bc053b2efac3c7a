import { newId } from '@mandate/shared/core';
import { MONGO_TARGET, MONGO_URL, describeIfAvailable, mongoSkipReason } from '@mandate/shared/testing';
import { mongoEventStoreOfSuite } from './adapters';
import { buildAuditEvent } from './factories';

/**
 * One audit process writes a tenant's batches concurrently (the consumer flushes a batch while the
 * next fills). They take their seqs in turn (docs/API.md#proving-the-log): a batch that claimed the
 * seqs another of the same process took would fail its insert, read the tenant's highest seq again
 * and retry, which under a backlog is most of the work. Batches waiting for their turn are written
 * as one (log-group-commit.test.ts).
 */
describeIfAvailable(
  !!MONGO_URL,
  `one process appending a tenant's batches at once (${MONGO_TARGET})`,
  mongoSkipReason ?? '',
  () => {
    const suite = mongoEventStoreOfSuite('auditappend');

    it('when eight batches of one tenant are stored at once, then the highest seq is read once, they are written as one insert, and seqs are 1…n', async () => {
      const tenant = newId('tnt');
      const batches = Array.from({ length: 8 }, (_, b) =>
        Array.from({ length: 25 }, (_, i) => buildAuditEvent(tenant, { data: { b, i } })),
      );
      const { store, connection } = suite;
      const logSize = jest.spyOn(store, 'logSize');
      const inserts = jest.spyOn(
        (store as unknown as { model: { collection: { insertMany: () => unknown } } }).model.collection,
        'insertMany',
      );
      await Promise.all(batches.map((batch) => store.insertMany(batch)));
      expect(logSize).toHaveBeenCalledTimes(1);
      expect(inserts).toHaveBeenCalledTimes(1);
      logSize.mockRestore();
      inserts.mockRestore();
      const seqs = (await connection.collection('events').find({ tenant_id: tenant }).toArray())
        .map((d) => d.seq as number)
        .sort((a, b) => a - b);
      expect(seqs).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
      expect(await store.logSize(tenant)).toBe(200);
    });
  },
);
