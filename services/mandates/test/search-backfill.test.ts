import type { Connection } from 'mongoose';
import { newId } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { connectMongo } from '@mandate/shared/data';
import {
  MONGO_TARGET,
  MONGO_URL,
  describeIfAvailable,
  mongoSkipReason,
  testDatabaseName,
} from '@mandate/shared/testing';
import { runSearchBackfill } from '../src/backfill-search';
import { MongoMandateStore } from '../src/store/mongo-mandate-store';
import { buildMandate } from './support';

/**
 * `npm run mandates:backfill-search` (docs/DECISIONS.md, "Mandate search"): mandates stored before
 * `search_text` existed are not found by `q` until it gives them the field; then they are.
 */
describeIfAvailable(
  !mongoSkipReason,
  `mandates search backfill on ${MONGO_TARGET}`,
  mongoSkipReason ?? '',
  () => {
    const db = testDatabaseName('mandates-backfill');
    let connection: Connection;
    let store: MongoMandateStore;
    beforeAll(async () => {
      connection = await connectMongo(MONGO_URL!, db, createLogger('mandates-backfill-test', 'silent'));
      store = await MongoMandateStore.create(connection);
    });
    afterAll(async () => {
      await connection.dropDatabase();
      await connection.close();
    });

    it('when mandates were stored without search text, then q finds them only after the backfill, which a second run leaves alone', async () => {
      const tenantId = newId('tnt');
      const older: string[] = [];
      for (let i = 0; i < 3; i++) {
        const m = buildMandate({
          tenant_id: tenantId,
          delegate: { id: `Agent-Legacy-${i}`, name: 'Ødegård Bot' },
        });
        await store.create(tenantId, m);
        older.push(m.id);
      }
      const current = buildMandate({ tenant_id: tenantId, delegate: { id: 'agent-legacy-new' } });
      await store.create(tenantId, current);
      // As a release before `q` stored them: no search_text.
      await connection
        .collection('mandates')
        .updateMany({ id: { $in: older } }, { $unset: { search_text: '' } });
      const found = async () =>
        (await store.list(tenantId, { q: 'LEGACY', limit: 10, now: new Date() })).map((m) => m.id);
      expect(await found()).toEqual([current.id]);

      const lines: string[] = [];
      expect(await runSearchBackfill({ MONGO_URL, MONGO_DB: db }, (l) => lines.push(l))).toBe(3);
      expect(lines).toEqual(['3 mandate(s) given their search text; GET /v1/mandates?q= finds them now']);
      expect(await found()).toEqual([current.id, ...older].sort().reverse());
      expect((await store.list(tenantId, { q: 'ødegård', limit: 10, now: new Date() })).length).toBe(3);

      expect(await store.backfillSearchText(2)).toBe(0);
    });
  },
);
