import { closeSync, fsyncSync, openSync, renameSync, ftruncateSync, writeSync } from 'node:fs';
import { readFile, rmdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { AuditEvent } from '../events';
import type { EventPublisher } from '../bus/types';
import type { Logger } from '../../observability/logger';

export interface JournalOptions {
  /** The directory of this process's spool (its lock file makes it this process's alone). */
  dir: string;
  logger: Logger;
  /** Past this size the journal is rewritten with only the events still waiting. */
  compactBytes?: number;
}

const JOURNAL = 'journal.ndjson';
/** Pause before a refused batch is handed over again (the spool's own replay retries every second). */
const RETRY_DELAY_MS = 1_000;

/** One journal line: the events handed over (`e`), or the ids whose publish has settled (`a`). */
type Line = { e: AuditEvent } | { a: string[] };

/**
 * A write-ahead journal in front of a publisher that answers later (the batcher's window, the
 * broker's confirm): publish() appends its events to a file with one synchronous write before it
 * returns, so an event a caller handed over before answering its client survives a SIGKILL of
 * the process (a completed write is the kernel's; only a machine crash can lose it). Once the
 * inner publisher has settled an event (confirmed by the broker or fsync'd into the spool), its
 * id is appended as acknowledged; an event it refused (the spool full) is handed over again. open() hands whatever an earlier run
 * left unacknowledged to the inner publisher again: at least once, and audit keeps each id once.
 */
export class JournaledPublisher implements EventPublisher {
  private fd: number;
  private bytes = 0;
  /** Events written and not yet acknowledged, by id. */
  private readonly waiting = new Map<string, AuditEvent>();
  private settled: string[] = [];
  private ackTimer?: NodeJS.Immediate;
  private closed = false;
  /** Set as close() begins: no refused batch is handed over again from then on (it stays in the journal). */
  private stopping = false;
  private lastFailureLog = 0;
  private lastRetryLog = 0;
  private readonly retries = new Set<NodeJS.Timeout>();

  private constructor(
    private readonly inner: EventPublisher,
    private readonly file: string,
    fd: number,
    private readonly compactBytes: number,
    private readonly logger: Logger,
  ) {
    this.fd = fd;
  }

  /** Opens (or takes over) the journal in `dir` and republishes what an earlier run left waiting. */
  static async open(inner: EventPublisher, options: JournalOptions): Promise<JournaledPublisher> {
    const file = path.join(options.dir, JOURNAL);
    const left = unacknowledged(await readFile(file, 'utf8').catch(() => ''), options.logger);
    const { fd, bytes } = rewrite(file, left, true);
    const journal = new JournaledPublisher(inner, file, fd, options.compactBytes ?? 4 << 20, options.logger);
    journal.bytes = bytes;
    if (left.length > 0) {
      options.logger.warn(
        { file, events: left.length },
        'event journal holds events an earlier run handed over but never saw settle; publishing them again',
      );
      for (const e of left) journal.waiting.set(e.id, e);
      journal
        .forward(left)
        .catch((err) => options.logger.error({ err, events: left.length }, 'journaled events not published'));
    }
    return journal;
  }

  get kind() {
    return this.inner.kind;
  }

  publish(events: AuditEvent[]): Promise<void> {
    if (events.length === 0) return Promise.resolve();
    if (this.closed) return this.inner.publish(events);
    let text = '';
    for (const e of events) text += JSON.stringify({ e }) + '\n';
    // Not journaled (the disk refused the write): published all the same, as without a journal.
    if (this.write(text)) for (const e of events) this.waiting.set(e.id, e);
    return this.forward(events);
  }

  accepting(): boolean {
    return this.inner.accepting?.() ?? true;
  }

  private forward(events: AuditEvent[]): Promise<void> {
    return this.inner.publish(events).then(
      () => {
        for (const e of events) this.settled.push(e.id);
        // One acknowledgement line for everything settled in this turn, not one per caller.
        this.ackTimer ??= setImmediate(() => this.acknowledge());
      },
      (err: unknown) => {
        // Refused (the spool full, its disk failing): the caller may have answered its client
        // already, so the events stay waiting, here and in the journal, and are handed over again
        // until something keeps them (docs/DECISIONS.md, "Event spool full"); never acknowledged as if published.
        this.retryLater(events, err);
        throw err;
      },
    );
  }

  private retryLater(events: AuditEvent[], err: unknown): void {
    if (this.stopping) return;
    const now = Date.now();
    if (now - this.lastRetryLog >= 10_000) {
      this.lastRetryLog = now;
      this.logger.warn(
        { err, events: events.length },
        'events refused by the publisher; kept in the journal and handed over again',
      );
    }
    const timer = setTimeout(() => {
      this.retries.delete(timer);
      this.forward(events).catch(() => undefined);
    }, RETRY_DELAY_MS);
    timer.unref();
    this.retries.add(timer);
  }

  private acknowledge(): void {
    this.ackTimer = undefined;
    if (this.settled.length === 0 || this.closed) return;
    const ids = this.settled;
    this.settled = [];
    this.write(JSON.stringify({ a: ids }) + '\n');
    for (const id of ids) this.waiting.delete(id);
    if (this.bytes < this.compactBytes) return;
    try {
      if (this.waiting.size === 0) {
        // Nothing waiting: the whole journal is history, and it starts over empty.
        ftruncateSync(this.fd, 0);
        this.bytes = 0;
        return;
      }
      // Under steady load something is always in flight: only what still waits is kept. The new
      // journal replaces the old before the old one's descriptor is let go.
      const old = this.fd;
      ({ fd: this.fd, bytes: this.bytes } = rewrite(this.file, [...this.waiting.values()], false));
      closeSync(old);
    } catch (err) {
      // The journal keeps growing instead; the next acknowledgement tries again.
      this.logger.error({ err, file: this.file }, 'event journal not compacted');
    }
  }

  /** Appends `text`; false (logged at most every 10 s) when the disk refuses it: never thrown at a caller answering its client. */
  private write(text: string): boolean {
    try {
      this.bytes += writeAll(this.fd, text);
      return true;
    } catch (err) {
      const now = Date.now();
      if (now - this.lastFailureLog >= 10_000) {
        this.lastFailureLog = now;
        this.logger.error(
          { err, file: this.file },
          'event journal write failed; events published unjournaled',
        );
      }
      return false;
    }
  }

  /**
   * Closes the inner publisher (which settles everything in flight), then removes the journal:
   * nothing in it waits any more. A journal left behind means the process did not get here.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.stopping = true;
    for (const timer of this.retries) clearTimeout(timer);
    this.retries.clear();
    await this.inner.close();
    if (this.ackTimer) clearImmediate(this.ackTimer);
    this.acknowledge();
    this.closed = true;
    closeSync(this.fd);
    if (this.waiting.size === 0) {
      await unlink(this.file).catch(() => undefined);
      // The spool removed its directory already unless it keeps events for the next start.
      await rmdir(path.dirname(this.file)).catch(() => undefined);
    }
  }
}

/**
 * Replaces the journal by one holding `events` (written beside it, then renamed over it, so a
 * kill at any point leaves one whole journal) and opens it for appending.
 */
function rewrite(file: string, events: AuditEvent[], sync: boolean): { fd: number; bytes: number } {
  const fresh = `${file}.new`;
  const freshFd = openSync(fresh, 'w');
  let bytes = 0;
  try {
    let text = '';
    for (const e of events) text += JSON.stringify({ e }) + '\n';
    bytes = writeAll(freshFd, text);
    // At start only: the journal a crashed run left is replaced, and that must not be undone.
    if (sync) fsyncSync(freshFd);
  } finally {
    closeSync(freshFd);
  }
  renameSync(fresh, file);
  return { fd: openSync(file, 'a'), bytes };
}

/** Writes all of `text` (a regular file takes it in one call; the loop is for the rare short write). */
function writeAll(fd: number, text: string): number {
  const buf = Buffer.from(text);
  let off = 0;
  while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
  return buf.length;
}

/** The events of a journal's text whose ids were never acknowledged, in the order they were written. */
function unacknowledged(text: string, logger: Logger): AuditEvent[] {
  const events = new Map<string, AuditEvent>();
  const { values, torn } = journalLines<Line>(text);
  // A torn last line: its write never returned, so no caller answered on it.
  if (torn > 0) logger.warn({ torn }, 'unreadable line in the event journal skipped');
  for (const line of values) {
    if ('e' in line) events.set(line.e.id, line.e);
    else for (const id of line.a) events.delete(id);
  }
  return [...events.values()];
}

/**
 * The values of an append-only newline-delimited JSON file's text, in the order written, and how
 * many lines did not parse: a line a crash tore in the middle of its write (whose writer never saw
 * it complete) is skipped, never thrown at the reader starting up.
 */
export function journalLines<T>(text: string): { values: T[]; torn: number } {
  const values: T[] = [];
  let torn = 0;
  for (const raw of text.split('\n')) {
    if (raw.length === 0) continue;
    try {
      values.push(JSON.parse(raw) as T);
    } catch {
      torn++;
    }
  }
  return { values, torn };
}
