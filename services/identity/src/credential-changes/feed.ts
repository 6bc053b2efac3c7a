import { timeToHeaders, type Logger } from '@mandate/shared/observability';
import type { ServerResponse } from 'node:http';
import { serviceUnavailable } from '@mandate/shared/core';
import type { CredentialChangeStore } from './credential-change-store';

/** One gateway's held answer, the epoch it was last told, and when its internal token runs out. */
interface FeedStream {
  res: ServerResponse;
  epoch: number | undefined;
  expiresAt: number;
}

/** A gateway that reads less than this far behind is cut off, not buffered for (it reconnects). */
const MAX_BUFFERED_BYTES = 1 << 20;

/**
 * The credential feed (docs/DECISIONS.md, "Credential changes"): each gateway holds one answer
 * open, and every `tickMs` this replica reads the epoch once for all of them and writes each a line
 * `{epoch, changes, at}` — the changes after the epoch it was last told, or `[]` as a heartbeat that
 * vouches for its caches as of `at` (read before the store). A change this replica recorded is
 * written at once, not at the next tick. So identity's idle cost is one read per tick whatever the
 * number of gateways and keys, and no request per check.
 */
export class CredentialChangeFeed {
  private readonly streams = new Set<FeedStream>();
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private again = false;
  private stopped = true;

  constructor(
    private readonly store: CredentialChangeStore,
    private readonly tickMs: number,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** The number of gateways holding the feed. */
  get size(): number {
    return this.streams.size;
  }

  /** Holds `res` open as a feed from `since` (none: the first line drops everything) until `expiresAt` (the caller's token). */
  serve(res: ServerResponse, since: number | undefined, expiresAt: number): void {
    // Stopping: a feed opened now would hold the closing server open; the gateway opens one elsewhere.
    if (this.stopped) throw serviceUnavailable('Identity is stopping; open the credential feed again');
    res.writeHead(200, { 'Content-Type': 'application/x-ndjson', 'Cache-Control': 'no-store' });
    // Headers now, so the gateway knows the feed is open before the first line.
    res.flushHeaders();
    timeToHeaders(res);
    const stream: FeedStream = { res, epoch: since, expiresAt };
    this.streams.add(stream);
    res.once('close', () => this.streams.delete(stream));
    this.tick();
  }

  /** A change was recorded here: tell the gateways now. */
  changed(): void {
    if (this.streams.size > 0) this.tick();
  }

  start(): void {
    this.stopped = false;
    if (this.timer) return;
    this.timer = setInterval(() => {
      if (this.streams.size > 0) this.tick();
    }, this.tickMs);
    this.timer.unref();
  }

  /** Ends every feed (each gateway falls back to its check and reconnects elsewhere); before the server closes, which would wait for them. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
    for (const stream of this.streams) stream.res.end();
    this.streams.clear();
    await this.running;
  }

  /** One round for every stream (a round under way runs once more after it). */
  private tick(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.round()
      .catch((err: unknown) =>
        this.logger.warn({ err }, 'credential feed round failed; the next tick tries again'),
      )
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.tick();
        }
      });
  }

  private async round(): Promise<void> {
    const at = this.now();
    // Usually every gateway was told the same epoch: one read for all of them.
    const byEpoch = new Map<number | undefined, FeedStream[]>();
    for (const stream of this.streams) {
      if (stream.expiresAt <= at) {
        // Its token ran out: it reconnects with a new one.
        stream.res.end();
        this.streams.delete(stream);
        continue;
      }
      const group = byEpoch.get(stream.epoch);
      if (group) group.push(stream);
      else byEpoch.set(stream.epoch, [stream]);
    }
    for (const [since, group] of byEpoch) {
      const { epoch, changes } = await this.store.since(since);
      const line = `${JSON.stringify({ epoch, changes, at })}\n`;
      for (const stream of group) {
        if (!this.streams.has(stream)) continue;
        if (stream.res.writableLength > MAX_BUFFERED_BYTES) {
          stream.res.destroy();
          continue;
        }
        stream.res.write(line);
        stream.epoch = epoch;
      }
    }
  }
}
