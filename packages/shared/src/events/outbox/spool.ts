import { randomBytes } from 'node:crypto';
import {
  mkdir,
  open,
  readdir,
  readFile,
  rm,
  rmdir,
  stat,
  unlink,
  writeFile,
  type FileHandle,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AuditEvent } from '../events';
import type { EventPublisher } from '../bus/types';
import { processMetrics, type SpoolSizeSource } from '../../observability/metrics';
import type { Logger } from '../../observability/logger';
import { journalLines } from './journal';
import { withTimeout } from './relay';

export interface SpoolOptions {
  /** This process's own directory (one process per directory; a lock file enforces it). */
  dir: string;
  logger: Logger;
  /** Bound of the spool on disk; past it, new events are refused (logged) rather than filling the disk. */
  maxBytes?: number;
  /** Pause between replay attempts while the broker is away. */
  retryDelayMs?: number;
  /** A publish not confirmed within this long counts as failed. */
  publishTimeoutMs?: number;
  /** Events per broker round trip when replaying. */
  replayBatch?: number;
  /** A segment file is sealed (and a new one started) past this size. */
  segmentBytes?: number;
  /** close() tries to replay what is spooled for at most this long before leaving it for the next start. */
  closeTimeoutMs?: number;
}

const SEGMENT = /^\d{15}-\d{9}\.ndjson$/;

/**
 * Where a service spools when EVENT_SPOOL_DIR is not set: per service, AMQP namespace and port,
 * so a restarted process finds what its predecessor left. Port 0 (tests) gets a unique directory.
 */
export function defaultSpoolDir(service: string, namespace: string, port: number): string {
  const instance = port === 0 ? `0-${process.pid}-${randomBytes(4).toString('hex')}` : String(port);
  return path.join(tmpdir(), 'mandate-event-spool', `${service}-${namespace}-${instance}`);
}

/**
 * A publisher that does not lose events when the broker is away. It publishes straight through
 * while the broker confirms; when a publish fails, the events are appended to a bounded spool
 * of newline-delimited JSON segment files (fsync'd before publish() resolves), and from then on
 * new events queue behind them until a replay loop has published (with confirms) and deleted
 * every segment, oldest first. A segment left by a crash or a shutdown during an outage is
 * replayed after the next start. At-least-once: a replay interrupted between the confirm and the
 * delete publishes again, and the audit store keeps each event id once.
 */
export class SpoolingPublisher implements EventPublisher, SpoolSizeSource {
  private spooling = false;
  private closed = false;
  private disk: Promise<unknown> = Promise.resolve();
  private active?: { file: string; handle: FileHandle; bytes: number };
  private bytesOnDisk = 0;
  /** A batch was refused for want of room: the gate stays shut until replay frees some. */
  private refusedForRoom = false;
  /** Batches waiting for the disk, and their bytes (counted against the bound already). */
  private toWrite: {
    data: string;
    bytes: number;
    events: number;
    resolve: () => void;
    reject: (err: unknown) => void;
  }[] = [];
  private queuedBytes = 0;
  private seq = 0;
  private replaying?: Promise<void>;
  private retryTimer?: NodeJS.Timeout;
  /** Lines of the oldest segment already confirmed, so a retried replay does not resend them. */
  private confirmed = { file: '', lines: 0 };
  private lastFailureLog = 0;
  private readonly opts: Required<Omit<SpoolOptions, 'dir' | 'logger'>>;

  private constructor(
    private readonly inner: EventPublisher,
    private readonly dir: string,
    private readonly logger: Logger,
    options: SpoolOptions,
  ) {
    this.opts = {
      maxBytes: options.maxBytes ?? 256 * 1024 * 1024,
      retryDelayMs: options.retryDelayMs ?? 1_000,
      publishTimeoutMs: options.publishTimeoutMs ?? 10_000,
      replayBatch: options.replayBatch ?? 500,
      segmentBytes: options.segmentBytes ?? 4 * 1024 * 1024,
      closeTimeoutMs: options.closeTimeoutMs ?? 5_000,
    };
  }

  /** Takes the directory (lock file), and starts replaying whatever an earlier run left there. */
  static async open(inner: EventPublisher, options: SpoolOptions): Promise<SpoolingPublisher> {
    const dir = path.resolve(options.dir);
    await mkdir(dir, { recursive: true });
    await lock(dir);
    const spool = new SpoolingPublisher(inner, dir, options.logger, options);
    processMetrics().spoolSources.add(spool);
    const segments = await spool.segments();
    for (const file of segments) spool.bytesOnDisk += (await stat(path.join(dir, file))).size;
    if (segments.length > 0) {
      spool.spooling = true;
      options.logger.warn(
        { dir, segments: segments.length, bytes: spool.bytesOnDisk },
        'event spool holds events from an earlier run; replaying them',
      );
      spool.scheduleReplay(0);
    } else {
      options.logger.info({ dir }, 'event spool ready (used while the broker is unreachable)');
    }
    return spool;
  }

  get kind() {
    return this.inner.kind;
  }

  /** Events waiting on disk (bytes), for readiness and tests. */
  get spooledBytes(): number {
    return this.bytesOnDisk;
  }

  /** The `event_spool_bytes` gauge. */
  pendingBytes(): number {
    return this.bytesOnDisk;
  }

  get isSpooling(): boolean {
    return this.spooling;
  }

  /**
   * False once the spool holds more than seven eighths of EVENT_SPOOL_MAX_MB: new calls are refused
   * (503) from then on, and the last eighth takes the events of calls answered before the gate
   * closed (docs/DECISIONS.md, "Event spool full"). A batch that still does not fit is refused
   * here and kept by the journal in front, which hands it over again once replay made room. From
   * that refusal on the gate is shut too, below seven eighths: a batch can be larger than the last
   * eighth, and new calls' events would join it when it is handed over again, so it would never fit.
   */
  accepting(): boolean {
    return (
      !this.refusedForRoom &&
      this.bytesOnDisk + this.queuedBytes + this.opts.maxBytes / 8 <= this.opts.maxBytes
    );
  }

  async publish(events: AuditEvent[]): Promise<void> {
    if (events.length === 0) return;
    if (!this.spooling && !this.closed) {
      try {
        await withTimeout(this.inner.publish(events), this.opts.publishTimeoutMs, 'event publish');
        return;
      } catch (err) {
        this.logFailure(err, 'broker unreachable: events go to the local spool until it is back');
      }
    }
    await this.append(events);
    this.scheduleReplay(this.opts.retryDelayMs);
  }

  /**
   * Queues one batch for the disk. Its bytes count against the bound at once (accepting()), not
   * only once written: under a slow disk, batches waiting for their turn held megabytes the gate
   * did not see, and calls kept being answered past the bound (docs/DECISIONS.md, "Event spool full").
   */
  private append(events: AuditEvent[]): Promise<void> {
    const data = events.map((e) => JSON.stringify(e)).join('\n') + '\n';
    const bytes = Buffer.byteLength(data);
    this.queuedBytes += bytes;
    return new Promise<void>((resolve, reject) => {
      this.toWrite.push({ data, bytes, events: events.length, resolve, reject });
      if (this.toWrite.length === 1) void this.serialized(() => this.writeQueued());
    });
  }

  /**
   * Group commit: every batch queued by now goes out in one write and one fsync, serialized with
   * every other disk step. Each batch is kept or refused whole, in order, by the room left.
   */
  private async writeQueued(): Promise<void> {
    const batches = this.toWrite;
    this.toWrite = [];
    const kept: typeof batches = [];
    let keptBytes = 0;
    for (const batch of batches) {
      this.queuedBytes -= batch.bytes;
      if (this.bytesOnDisk + keptBytes + batch.bytes > this.opts.maxBytes) {
        this.refusedForRoom = true;
        batch.reject(
          new Error(
            `event spool full (${this.bytesOnDisk + keptBytes} of ${this.opts.maxBytes} bytes): ${batch.events} events refused`,
          ),
        );
        continue;
      }
      kept.push(batch);
      keptBytes += batch.bytes;
    }
    if (kept.length === 0) return;
    try {
      this.spooling = true;
      if (this.active && this.active.bytes >= this.opts.segmentBytes) await this.seal();
      if (!this.active) {
        const file = `${String(Date.now()).padStart(15, '0')}-${String(this.seq++ % 1e9).padStart(9, '0')}.ndjson`;
        this.active = { file, handle: await open(path.join(this.dir, file), 'a'), bytes: 0 };
      }
      await this.active.handle.write(kept.map((b) => b.data).join(''));
      await this.active.handle.sync();
      this.active.bytes += keptBytes;
      this.bytesOnDisk += keptBytes;
    } catch (err) {
      for (const batch of kept) batch.reject(err);
      return;
    }
    for (const batch of kept) batch.resolve();
  }

  private async seal(): Promise<void> {
    const active = this.active;
    this.active = undefined;
    await active?.handle.close();
  }

  private async segments(): Promise<string[]> {
    return (await readdir(this.dir)).filter((f) => SEGMENT.test(f)).sort();
  }

  private scheduleReplay(delayMs: number): void {
    if (this.replaying || this.retryTimer || this.closed) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      let failed = false;
      this.replaying = this.replayAll()
        .catch((err) => {
          failed = true;
          this.logFailure(err, 'event spool replay failed; retrying');
        })
        .finally(() => {
          this.replaying = undefined;
          // Rescheduled only once this attempt is over (scheduleReplay ignores calls while one runs).
          if (failed) this.scheduleReplay(this.opts.retryDelayMs);
        });
    }, delayMs);
    this.retryTimer.unref();
  }

  private async replayAll(): Promise<void> {
    for (;;) {
      // The oldest segment; the active one is sealed first so nothing is appended to a file being replayed.
      const file = await this.serialized(async () => {
        const segments = await this.segments();
        if (segments.length === 0) {
          this.spooling = false;
          this.bytesOnDisk = 0;
          this.logger.info('event spool empty: publishing straight to the broker again');
          return undefined;
        }
        if (this.active?.file === segments[0]) await this.seal();
        return segments[0];
      });
      if (!file) return;
      const full = path.join(this.dir, file);
      const text = await readFile(full, 'utf8');
      const lines = text.split('\n').filter((l) => l.length > 0);
      const size = Buffer.byteLength(text);
      let start = this.confirmed.file === file ? this.confirmed.lines : 0;
      while (start < lines.length) {
        const chunk = lines.slice(start, start + this.opts.replayBatch);
        const { values: events, torn } = journalLines<AuditEvent>(chunk.join('\n'));
        // A line torn by a crash mid-write: its batch was never acknowledged to anyone.
        if (torn > 0) this.logger.warn({ file, torn }, 'unreadable line in the event spool skipped');
        await withTimeout(this.inner.publish(events), this.opts.publishTimeoutMs, 'spool replay');
        start += chunk.length;
        this.confirmed = { file, lines: start };
      }
      await unlink(full);
      this.bytesOnDisk = Math.max(0, this.bytesOnDisk - size);
      this.refusedForRoom = false;
      this.logger.info({ file, events: lines.length }, 'spooled events published');
    }
  }

  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    const op = this.disk.then(fn);
    this.disk = op.catch(() => undefined);
    return op;
  }

  private logFailure(err: unknown, message: string): void {
    const now = Date.now();
    if (now - this.lastFailureLog < 10_000) return;
    this.lastFailureLog = now;
    this.logger.warn({ err, dir: this.dir }, message);
  }

  /**
   * Graceful shutdown: waits for a replay in progress and, if anything is still spooled, tries
   * once more for a bounded time; whatever is left stays on disk (fsync'd) for the next start.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    await this.replaying;
    if (this.spooling) {
      await withTimeout(this.replayAll(), this.opts.closeTimeoutMs, 'spool replay at shutdown').catch((err) =>
        this.logger.warn(
          { err, dir: this.dir, bytes: this.bytesOnDisk },
          'event spool kept on disk for the next start',
        ),
      );
    }
    await this.serialized(() => this.seal());
    await unlock(this.dir);
    processMetrics().spoolSources.delete(this);
    // An empty spool leaves nothing behind; one holding events stays for the next start.
    await rmdir(this.dir).catch(() => undefined);
    await this.inner.close();
  }
}

/** One process per spool directory: two replaying the same files would race on deleting them. */
async function lock(dir: string): Promise<void> {
  const file = path.join(dir, 'LOCK');
  try {
    await writeFile(file, String(process.pid), { flag: 'wx' });
    return;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const holder = Number((await readFile(file, 'utf8').catch(() => '')).trim());
  if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder)) {
    throw new Error(
      `event spool ${dir} is in use by process ${holder} (EVENT_SPOOL_DIR must be per process)`,
    );
  }
  // Left by a process that is gone (a crash or SIGKILL): take it over.
  await writeFile(file, String(process.pid));
}

async function unlock(dir: string): Promise<void> {
  await rm(path.join(dir, 'LOCK'), { force: true });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
