import type { Connection } from 'mongoose';
import { createLogger } from '@mandate/shared/observability';
import { connectMongo } from '@mandate/shared/data';
import {
  MONGO_URL,
  memoryAdapter,
  mongoAdapter,
  testDatabaseName,
  type AdapterFactory,
} from '@mandate/shared/testing';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AuditStore } from '../src/store/event-store';
import { FileEventStore } from '../src/store/file-event-store';
import { MemoryEventStore } from '../src/store/memory-event-store';
import { MongoEventStore } from '../src/store/mongo-event-store';

const logger = createLogger('audit-test', 'silent');

/** Every EventStore adapter, for the contract suites (MongoDB reported skipped without MONGO_URL). */
export function eventStoreAdapters(): AdapterFactory<AuditStore>[] {
  return [
    memoryAdapter(() => new MemoryEventStore()),
    {
      name: 'journal file (AUDIT_STORE_FILE)',
      create: async () => {
        const dir = await mkdtemp(path.join(tmpdir(), 'audit-journal-'));
        const store = await FileEventStore.open(path.join(dir, 'events.ndjson'), logger);
        return {
          store,
          close: async () => {
            await store.close();
            await rm(dir, { recursive: true, force: true });
          },
        };
      },
    },
    mongoAdapter('audit', async (connection) => {
      const store = new MongoEventStore(connection);
      await store.init();
      return store;
    }),
  ];
}

/**
 * For a suite about the Mongo store alone (inside describeIfAvailable on MONGO_URL): a
 * MongoEventStore on a database of its own, opened before the suite and dropped after it.
 */
export function mongoEventStoreOfSuite(prefix: string): {
  database: string;
  connection: Connection;
  store: MongoEventStore;
} {
  const database = testDatabaseName(prefix);
  let connection: Connection | undefined;
  let store: MongoEventStore | undefined;
  beforeAll(async () => {
    connection = await connectMongo(MONGO_URL!, database, logger);
    store = new MongoEventStore(connection);
    await store.init();
  });
  afterAll(async () => {
    await connection?.dropDatabase();
    await connection?.close();
  });
  return {
    database,
    get connection() {
      return connection!;
    },
    get store() {
      return store!;
    },
  };
}
