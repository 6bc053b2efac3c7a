import type { Connection } from 'mongoose';
import { createLogger } from '../observability/logger';
import { connectMongo } from '../data/mongo';
import { describeIfAvailable } from './tools';

/**
 * Runs one store contract suite against every adapter. The MongoDB half runs against MONGO_URL:
 * jest's globalSetup points it at the MongoDB stand-in unless a real MongoDB is given; only a run
 * without that setup (no MONGO_URL at all) reports it skipped, with the reason in its name.
 */
export interface AdapterFactory<S> {
  name: string;
  /** Returns a fresh store and a cleanup; `undefined` means the adapter cannot run here. */
  create: () => Promise<{ store: S; close: () => Promise<void> }>;
  skipReason?: string;
}

export const MONGO_URL = process.env.MONGO_URL;
export const mongoSkipReason = MONGO_URL ? undefined : 'MONGO_URL is not set, no MongoDB server here';
/** True when MONGO_URL is the test stand-in (test/support/mongo-standin), not a real MongoDB. */
export const MONGO_IS_STANDIN = process.env.MONGO_STANDIN === '1';
/** How test names call the Mongo adapter's server, so a pass on the stand-in never reads as MongoDB's. */
export const MONGO_TARGET = MONGO_IS_STANDIN ? 'the MongoDB stand-in' : 'MongoDB (MONGO_URL)';
/** The Mongo adapter's name in contract suites. */
export const MONGO_ADAPTER = MONGO_IS_STANDIN
  ? 'mongo on the MongoDB stand-in'
  : 'mongo on MongoDB (MONGO_URL)';
/** A database name of its own for one suite (dropped by that suite afterwards). */
export const testDatabaseName = (prefix: string) =>
  `${prefix}_test_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;

/** The in-memory adapter: a fresh store per suite, nothing to clean up. */
export function memoryAdapter<S>(create: () => S): AdapterFactory<S> {
  return { name: 'memory', create: async () => ({ store: create(), close: async () => undefined }) };
}

/**
 * The Mongo adapter: `open` builds the store on a database of its own (named after `prefix`),
 * which close() drops. Reported skipped without MONGO_URL.
 */
export function mongoAdapter<S>(
  prefix: string,
  open: (connection: Connection) => Promise<S>,
): AdapterFactory<S> {
  return {
    name: MONGO_ADAPTER,
    skipReason: mongoSkipReason,
    create: async () => {
      const logger = createLogger(`${prefix}-test`, 'silent');
      const connection = await connectMongo(MONGO_URL!, testDatabaseName(prefix), logger);
      const store = await open(connection);
      return {
        store,
        close: async () => {
          await connection.dropDatabase();
          await connection.close();
        },
      };
    },
  };
}

export function describeStoreContract<S>(
  storeName: string,
  adapters: AdapterFactory<S>[],
  suite: (getStore: () => S) => void,
): void {
  for (const adapter of adapters) {
    const title = `${storeName} contract — ${adapter.name} adapter`;
    describeIfAvailable(!adapter.skipReason, title, adapter.skipReason ?? '', () => {
      let current: { store: S; close: () => Promise<void> } | undefined;
      beforeAll(async () => {
        current = await adapter.create();
      });
      afterAll(async () => {
        await current?.close();
      });
      suite(() => {
        if (!current) throw new Error('store not created');
        return current.store;
      });
    });
  }
}

/**
 * Walks a store's cursor list to its end: each read asks for `limit` after the previous page's
 * last id, the store answering up to `limit + 1` (the one past shows another page follows).
 * Answers every id seen, in order; stops after 20 pages so a cursor that never ends fails the test.
 */
export async function walkPages<T extends { id: string }>(
  limit: number,
  list: (page: { limit: number; afterId: string | undefined }) => Promise<T[]>,
): Promise<string[]> {
  const seen: string[] = [];
  let afterId: string | undefined;
  for (let guard = 0; guard < 20; guard++) {
    const items = await list({ limit, afterId });
    seen.push(...items.slice(0, limit).map((item) => item.id));
    if (items.length <= limit) break;
    afterId = items[limit - 1]!.id;
  }
  return seen;
}
