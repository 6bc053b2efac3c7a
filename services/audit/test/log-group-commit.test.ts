import type { CommandStartedEvent } from 'mongodb';
import { newId } from '@mandate/shared/core';
import { type AuditEvent } from '@mandate/shared/events';
import mongoose, { type Connection } from 'mongoose';
import {
  MONGO_TARGET,
  MONGO_URL,
  describeIfAvailable,
  mongoSkipReason,
  testDatabaseName,
} from '@mandate/shared/testing';
import { MemoryEventStore } from '../src/store/memory-event-store';
import { MongoEventStore } from '../src/store/mongo-event-store';
import { buildAuditEvent } from './factories';

/**
 * The Mongo store's appends of one tenant take their seqs in turn; batches that arrive meanwhile
 * are written together (docs/DECISIONS.md, "A tamper-evident audit log: RFC 9162, one tree per tenant"). Under a backlog the consumer
 * writes many small batches at once: written one at a time, a round trip each, audit stored a few
 * dozen events a second and never caught up with a load that kept going.
 */
describeIfAvailable(
  !!MONGO_URL,
  `audit log appends of one tenant, grouped (${MONGO_TARGET})`,
  mongoSkipReason ?? '',
  () => {
    // A connection of its own, with command monitoring (read when each driver connection opens).
    let connection: Connection;
    let store: MongoEventStore;
    beforeAll(async () => {
      connection = mongoose.createConnection(MONGO_URL!, {
        dbName: testDatabaseName('auditgroup'),
        monitorCommands: true,
      });
      await connection.asPromise();
      store = new MongoEventStore(connection);
      await store.init();
    });
    afterAll(async () => {
      await connection?.dropDatabase();
      await connection?.close();
    });

    it('when 60 small batches of one tenant arrive at once, one of them twice, then they are written in a few inserts, seqs 1…120 gap-free, each event once, and the tree is the one of those events in seq order', async () => {
      const tenant = newId('tnt');
      const events = Array.from({ length: 120 }, (_, i) => buildAuditEvent(tenant, { data: { i } }));
      const batches = Array.from({ length: 60 }, (_, b) => events.slice(b * 2, b * 2 + 2));
      // The insert commands into the events collection, as the driver sends them to the server.
      const client = connection.getClient();
      let inserts = 0;
      const count = (e: CommandStartedEvent) => {
        if (e.commandName === 'insert' && e.command.insert === 'events') inserts++;
      };
      client.on('commandStarted', count);
      try {
        await Promise.all([...batches, batches[7]!].map((b) => store.insertMany(b)));
      } finally {
        client.off('commandStarted', count);
      }
      // The first batch alone (nothing was waiting yet), then every batch that waited meanwhile.
      expect(inserts).toBeGreaterThanOrEqual(1);
      expect(inserts).toBeLessThanOrEqual(3);

      const page = await store.list(tenant, { limit: 200 });
      const stored = [...page].sort((a, b) => a.seq! - b.seq!);
      expect(stored.map((e) => e.seq)).toEqual(Array.from({ length: 120 }, (_, i) => i + 1));
      expect(new Set(stored.map((e) => e.id)).size).toBe(120);
      expect(await store.logSize(tenant)).toBe(120);
      // The same events appended one by one in seq order give the same tree.
      const reference = new MemoryEventStore();
      for (const e of stored) await reference.insert({ ...e, seq: undefined } as AuditEvent);
      const hex = (h: Uint8Array) => Buffer.from(h).toString('hex');
      const ranges: [number, number][] = [
        [0, 120],
        [0, 64],
        [64, 120],
      ];
      expect((await store.logHashes(tenant, ranges)).map(hex)).toEqual(
        (await reference.logHashes(tenant, ranges)).map(hex),
      );
    });
  },
);
