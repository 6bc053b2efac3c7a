import { appendFile } from 'node:fs/promises';
import path from 'node:path';
import { newId } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { tempDirEach } from '@mandate/shared/testing';
import { FileEventStore } from '../src/store/file-event-store';
import { buildAuditEvent } from './factories';

const logger = createLogger('audit-test', 'silent');

describe('audit journal file store', () => {
  const dir = tempDirEach('audit-journal-');

  it('when the process restarts (even after a crash tore the last line), then every written event is read back once and a repeat is still ignored', async () => {
    const file = path.join(dir(), 'events.ndjson');
    const tenant = newId('tnt');
    const first = await FileEventStore.open(file, logger);
    const events = Array.from({ length: 5 }, () => buildAuditEvent(tenant));
    await first.insertMany(events);
    await first.insertMany([events[0]!, events[1]!]);
    await first.close();
    // A crash in the middle of the next batch's write.
    await appendFile(file, '{"id":"evt_torn","tenant_');

    const second = await FileEventStore.open(file, logger);
    const listed = await second.list(tenant, { limit: 100 });
    expect(listed.map((e) => e.id).sort()).toEqual(events.map((e) => e.id).sort());
    await second.insertMany(events);
    const extra = buildAuditEvent(tenant);
    await second.insert(extra);
    await second.close();

    const third = await FileEventStore.open(file, logger);
    expect((await third.list(tenant, { limit: 100 })).length).toBe(6);
    await third.close();
  });
});
