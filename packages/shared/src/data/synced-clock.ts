import type { Logger } from '../observability/logger';
import { PeriodicTask } from '../core/periodic';
import type { Clock } from '../core/time';

/** Another machine's time in epoch milliseconds (Redis's `TIME`: `redisTime`). */
export type TimeSource = () => Promise<number>;

/** Redis's `TIME` ([seconds, microseconds] as strings) in epoch milliseconds. */
export async function redisTime(redis: { time(): Promise<(string | number)[]> }): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Number(micros) / 1000;
}

export interface SyncedClockOptions {
  /** Between two readings of the source (default 10 s): the local clock's drift in between is what is left. */
  intervalMs?: number;
  /** Readings per sync, the one with the shortest round trip kept (default 3). */
  samples?: number;
  /** A sync whose best round trip is longer is not used (default 500 ms: an offset off by at most 250 ms). */
  maxRttMs?: number;
  /** This host's clock (tests pass their own). */
  local?: () => number;
}

/** What one sync measured: the source's clock minus this host's, and the round trip it was read in. */
export interface ClockSync {
  offsetMs: number;
  rttMs: number;
}

/** The longest round trip of a reading that is used: half of it is the most the offset can be off. */
export const CLOCK_SYNC_MAX_RTT_MS = 500;

/**
 * This host's clock moved onto another's (Redis's, docs/DECISIONS.md, "Time"): `now()` is the
 * local time plus the offset the last sync measured, so it costs no round trip, and every process
 * synced to the same source reads the same time whatever its host's clock says. A sync reads the
 * source `samples` times and keeps the reading with the shortest round trip; its offset is off by
 * at most half that round trip, and a sync whose best round trip is over `maxRttMs` is not used.
 * A failed sync keeps the offset it had (none before the first: the local clock).
 */
export class SyncedClock implements Clock {
  private offsetMs = 0;
  private last?: ClockSync;
  private readonly periodic: PeriodicTask;
  private readonly local: () => number;

  constructor(
    private readonly source: TimeSource,
    private readonly logger: Logger,
    private readonly options: SyncedClockOptions = {},
  ) {
    this.local = options.local ?? Date.now;
    this.periodic = new PeriodicTask(
      options.intervalMs ?? 10_000,
      () => this.sync(),
      (err) => this.logger.warn({ err }, 'clock sync failed; keeping the last offset'),
    );
  }

  now(): Date {
    return new Date(this.local() + this.offsetMs);
  }

  /** The last sync's figures (undefined before one succeeded). */
  get synced(): ClockSync | undefined {
    return this.last;
  }

  /** Reads the source and moves the offset; throws (offset kept) when no reading succeeds. */
  async sync(): Promise<ClockSync> {
    let best: ClockSync | undefined;
    for (let i = 0; i < Math.max(1, this.options.samples ?? 3); i++) {
      const sent = this.local();
      const remote = await this.source();
      const received = this.local();
      const rttMs = received - sent;
      if (!best || rttMs < best.rttMs) best = { offsetMs: remote - (sent + received) / 2, rttMs };
    }
    const maxRttMs = this.options.maxRttMs ?? CLOCK_SYNC_MAX_RTT_MS;
    if (best!.rttMs > maxRttMs)
      throw new Error(`clock sync: best round trip ${best!.rttMs} ms is over ${maxRttMs} ms; not used`);
    this.offsetMs = best!.offsetMs;
    this.last = best;
    return best!;
  }

  /** A first sync (a failure logged, the local clock then used until a later one succeeds), then one every interval. */
  async start(what: string): Promise<void> {
    await this.sync().then(
      ({ offsetMs, rttMs }) =>
        this.logger[Math.abs(offsetMs) > 1_000 ? 'warn' : 'info'](
          { offsetMs: Math.round(offsetMs), rttMs },
          `${what} on Redis's clock (offsetMs: Redis's clock minus this host's)`,
        ),
      (err) => this.logger.warn({ err }, `${what}: Redis's clock unread; this host's clock until it is`),
    );
    this.periodic.start();
  }

  async stop(): Promise<void> {
    await this.periodic.stop();
  }
}
