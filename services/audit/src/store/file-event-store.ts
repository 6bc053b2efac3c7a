import { mkdir, open, readFile, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { type Logger } from '@mandate/shared/observability';
import { type LeafRange } from '@mandate/shared/mandate';
import { journalLines, type AuditEvent } from '@mandate/shared/events';
import type {
  BackfillReport,
  DecisionCount,
  EventFilters,
  EventListQuery,
  EventStore,
  LogStore,
  StatsBucket,
  StoredCheckpoint,
} from './event-store';
import { MemoryEventStore } from './memory-event-store';

/**
 * The memory store made durable by an append-only journal (newline-delimited JSON, fsync'd per
 * batch before the write resolves, so before the consumer acks). For a single process without
 * MongoDB: `AUDIT_STORE_FILE`. It survives a crash (SIGKILL included): at start the journal is
 * read back, a line torn by the crash is skipped (its batch was never acked, so the broker
 * delivers it again). Idempotent by event id like every store: an id already journaled is not
 * written twice.
 */
export class FileEventStore implements EventStore, LogStore {
  readonly kind = 'memory' as const;
  private writing: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly memory: MemoryEventStore,
    private readonly handle: FileHandle,
  ) {}

  static async open(file: string, logger: Logger): Promise<FileEventStore> {
    await mkdir(path.dirname(path.resolve(file)), { recursive: true });
    const memory = new MemoryEventStore();
    const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return '';
      throw err;
    });
    const handle = await open(file, 'a');
    // A torn last line must not swallow the next append: end it first.
    if (text.length > 0 && !text.endsWith('\n')) await handle.write('\n');
    const store = new FileEventStore(memory, handle);
    const { values, torn } = journalLines<AuditEvent>(text);
    await memory.insertMany(values);
    logger.info({ file, events: memory.size, torn }, 'audit store: journal file read back');
    return store;
  }

  async insert(event: AuditEvent): Promise<void> {
    await this.insertMany([event]);
  }

  /** Journals the new ids (one fsync), then makes them readable; writes are serialized. */
  insertMany(events: AuditEvent[]): Promise<void> {
    const op = this.writing.then(async () => {
      const fresh = new Map<string, AuditEvent>();
      for (const event of events)
        if (!this.memory.has(event.id) && !fresh.has(event.id)) fresh.set(event.id, event);
      if (fresh.size === 0) return;
      const batch = [...fresh.values()];
      await this.handle.write(batch.map((e) => JSON.stringify(e)).join('\n') + '\n');
      await this.handle.sync();
      // The memory store is the set of journaled ids: no second copy of a million ids.
      await this.memory.insertMany(batch);
    });
    this.writing = op.catch(() => undefined);
    return op;
  }

  get(tenantId: string, id: string): Promise<AuditEvent | null> {
    return this.memory.get(tenantId, id);
  }

  list(tenantId: string, query: EventListQuery): Promise<AuditEvent[]> {
    return this.memory.list(tenantId, query);
  }

  count(tenantId: string, filters: EventFilters): Promise<number> {
    return this.memory.count(tenantId, filters);
  }

  listByResource(tenantId: string, resourceId: string, limit: number): Promise<AuditEvent[]> {
    return this.memory.listByResource(tenantId, resourceId, limit);
  }

  readByResource(tenantId: string, resourceId: string): AsyncIterable<AuditEvent> {
    return this.memory.readByResource(tenantId, resourceId);
  }

  countVerifications(
    tenantId: string,
    query: { since: string; until: string; bucket: StatsBucket },
  ): Promise<DecisionCount[]> {
    return this.memory.countVerifications(tenantId, query);
  }

  async ping(): Promise<void> {}

  // The log is rebuilt from the journal at start, in journal order: the same seqs, the same tree.
  // Checkpoints live in memory only; after a restart new ones are signed over the same tree, so a
  // checkpoint kept from before stays consistent with them (docs/API.md#proving-the-log).
  logSize(tenantId: string): Promise<number> {
    return this.memory.logSize(tenantId);
  }

  logHashes(tenantId: string, ranges: readonly LeafRange[]): Promise<Uint8Array[]> {
    return this.memory.logHashes(tenantId, ranges);
  }

  logHeads(): Promise<{ tenantId: string; size: number }[]> {
    return this.memory.logHeads();
  }

  backfillLog(): Promise<BackfillReport[]> {
    return this.memory.backfillLog();
  }

  saveCheckpoint(checkpoint: StoredCheckpoint): Promise<void> {
    return this.memory.saveCheckpoint(checkpoint);
  }

  latestCheckpoint(tenantId: string): Promise<StoredCheckpoint | null> {
    return this.memory.latestCheckpoint(tenantId);
  }

  getCheckpoint(tenantId: string, treeSize: number): Promise<StoredCheckpoint | null> {
    return this.memory.getCheckpoint(tenantId, treeSize);
  }

  listCheckpoints(
    tenantId: string,
    query: { limit: number; beforeSize?: number },
  ): Promise<StoredCheckpoint[]> {
    return this.memory.listCheckpoints(tenantId, query);
  }

  async close(): Promise<void> {
    await this.writing;
    await this.handle.close();
  }
}
