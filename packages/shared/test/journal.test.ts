import { appendFile, readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { createLogger } from '../src/observability';
import { JournaledPublisher, type AuditEvent } from '../src/events';
import { anyEvent, tempDirEach } from '../src/testing';
import { startScript } from '../../../test/support/script-process';

const logger = createLogger('test', 'silent');
const apiCall = () => anyEvent({ type: 'API_CALL', tenantId: 'tnt_x', resource: null, data: {} });

/** Takes every batch and resolves it at once, remembering what it took. */
class Taking {
  readonly kind = 'rabbitmq' as const;
  readonly taken: AuditEvent[] = [];
  closed = false;
  async publish(events: AuditEvent[]) {
    this.taken.push(...events);
  }
  async close() {
    this.closed = true;
  }
}

describe('JournaledPublisher', () => {
  const dir = tempDirEach('journal-test-');

  it('when the process is killed with SIGKILL while events wait for their publish, then the next start publishes exactly those again (a torn last line skipped), and a clean close leaves nothing', async () => {
    const holder = await startScript(
      'packages/shared/test/fixtures/journal-holder.ts',
      { JOURNAL_DIR: dir() },
      (lines) => lines.some((l) => l.startsWith('{')),
      'the journal holder',
    );
    const ids = JSON.parse(holder.lines.find((l) => l.startsWith('{'))!) as {
      waiting: string[];
      settled: string[];
    };
    holder.child.kill('SIGKILL');
    await holder.exited;
    // A write torn by a crash: never returned, so no caller answered on it.
    await appendFile(path.join(dir(), 'journal.ndjson'), '{"e":{"id":"evt_torn","ty');

    const inner = new Taking();
    const journal = await JournaledPublisher.open(inner, { dir: dir(), logger });
    expect(inner.taken.map((e) => e.id)).toEqual(ids.waiting);
    expect(inner.taken.every((e) => e.data.settle === false)).toBe(true);
    await journal.close();
    expect(inner.closed).toBe(true);
    // Everything settled and closed: the journal and its directory are gone.
    await expect(readdir(dir())).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('when events keep coming while one never settles, then the journal stays bounded and still holds the one waiting', async () => {
    let release!: () => void;
    const held = apiCall();
    const inner = new Taking();
    const holding = {
      kind: 'rabbitmq' as const,
      publish: (events: AuditEvent[]) =>
        events[0] === held ? new Promise<void>((r) => (release = r)) : inner.publish(events),
      close: () => inner.close(),
    };
    const journal = await JournaledPublisher.open(holding, { dir: dir(), logger, compactBytes: 4_096 });
    const first = journal.publish([held]);
    for (let i = 0; i < 300; i++) {
      await journal.publish([apiCall()]);
      await new Promise((r) => setImmediate(r));
    }
    const file = path.join(dir(), 'journal.ndjson');
    // 300 events of ~250 bytes and their acknowledgements went through a journal of at most ~4 KB.
    expect((await stat(file)).size).toBeLessThan(8_192);
    expect(await readFile(file, 'utf8')).toContain(held.id);
    release();
    await first;
    await journal.close();
    expect(inner.taken).toHaveLength(300);
  });

  it('when the publisher behind refuses a batch (the spool full), then its events stay in the journal unacknowledged and are handed over again until taken, once', async () => {
    const inner = new Taking();
    let refusals = 2;
    const refusing = {
      kind: 'rabbitmq' as const,
      publish: (events: AuditEvent[]) =>
        refusals-- > 0 ? Promise.reject(new Error('event spool full')) : inner.publish(events),
      close: () => inner.close(),
    };
    const journal = await JournaledPublisher.open(refusing, { dir: dir(), logger });
    const event = apiCall();
    await expect(journal.publish([event])).rejects.toThrow('event spool full');
    // Still waiting: a SIGKILL now would hand it over again at the next start.
    await new Promise((r) => setImmediate(r));
    const journaled = await readFile(path.join(dir(), 'journal.ndjson'), 'utf8');
    expect(journaled).toContain(event.id);
    expect(journaled).not.toContain('"a":');
    // Handed over again (once a second) until the publisher takes it.
    const deadline = Date.now() + 10_000;
    while (inner.taken.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(inner.taken.map((e) => e.id)).toEqual([event.id]);
    await journal.close();
    expect(inner.taken).toHaveLength(1);
  });
});
