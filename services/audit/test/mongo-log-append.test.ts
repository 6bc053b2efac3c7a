import type { Connection } from 'mongoose';
import { connectMongo, createLogger, newId } from '@mandate/shared';
import {
  MONGO_TARGET,
  MONGO_URL,
  describeIfAvailable,
  mongoSkipReason,
  testDatabaseName,
} from '@mandate/shared/testing';
import { MongoEventStore } from '../src/store/mongo-event-store';
import { buildAuditEvent } from './factories';

/**
 * One audit process writes a tenant's batches concurrently (the consumer flushes a batch while the
 * next fills). They take their seqs in turn (docs/API.md#proving-the-log): a batch that claimed the
 * seqs another of the same process took would fail its insert, read the tenant's highest seq again
 * and retry, which under a backlog is most of the work.
 */
const logger = createLogger('audit-append-test', 'silent');

describeIfAvailable(
  !!MONGO_URL,
  `one process appending a tenant's batches at once (${MONGO_TARGET})`,
  mongoSkipReason ?? '',
  () => {
    let connection: Connection;
    let store: MongoEventStore;
    const db = testDatabaseName('auditappend');

    beforeAll(async () => {
      connection = await connectMongo(MONGO_URL!, db, logger);
      store = new MongoEventStore(connection);
      await store.init();
    });
    afterAll(async () => {
      await connection.dropDatabase();
      await connection.close();
    });

    it('when eight batches of one tenant are stored at once, then the highest seq is read once, no insert collides, and seqs are 1…n', async () => {
      const tenant = newId('tnt');
      const batches = Array.from({ length: 8 }, (_, b) =>
        Array.from({ length: 25 }, (_, i) => buildAuditEvent(tenant, { data: { b, i } })),
      );
      const logSize = jest.spyOn(store, 'logSize');
      const inserts = jest.spyOn(
        (store as unknown as { model: { collection: { insertMany: () => unknown } } }).model.collection,
        'insertMany',
      );
      await Promise.all(batches.map((batch) => store.insertMany(batch)));
      expect(logSize).toHaveBeenCalledTimes(1);
      expect(inserts).toHaveBeenCalledTimes(8);
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
