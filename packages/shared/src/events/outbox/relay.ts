import type { AuditEvent } from '../events';
import type { EventPublisher } from '../bus/types';
import type { Logger } from '../../observability/logger';
import { processMetrics, type OutboxBacklogSource } from '../../observability/metrics';

/**
 * The outbox half of a store: events written in the same atomic write as the change they
 * record, waiting to be published. Implemented by each producer's store (memory and MongoDB).
 */
export interface OutboxStore {
  /** Up to `limit` unsent events (a record's own events in the order they were written). */
  pendingEvents(limit: number): Promise<AuditEvent[]>;
  /** Removes these events from the outbox; called only after the broker confirmed them. */
  markSent(eventIds: string[]): Promise<void>;
}

export interface OutboxRelayOptions {
  /** How often the outbox is looked at without a kick (another instance's writes, a broker that came back). */
  pollIntervalMs?: number;
  /** Events published (and confirmed) per round trip. */
  batchSize?: number;
  /** A publish that has not been confirmed after this long counts as failed (the events stay pending). */
  publishTimeoutMs?: number;
  /** After a failed publish, kicks are ignored for this long; the next poll tries again. */
  retryDelayMs?: number;
  /**
   * Fast-path publishes awaiting their confirm past which a writer waits for its own (at most
   * publishNow's `waitMs`) before answering: below it a write answers without the confirm's
   * round trip, above it writers are paced by what the broker confirms.
   */
  maxUnconfirmed?: number;
}

/** Fast-path publishes awaiting a confirm before writers wait for theirs (OutboxRelayOptions.maxUnconfirmed). */
export const DEFAULT_MAX_UNCONFIRMED = 32;

/** Rejects when `p` has not settled within `ms`; the timer never keeps the process alive. */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/**
 * What a domain needs of the relay: hand it the events a write has just stored in the outbox
 * (the fast path); never throws. OutboxRelay is the implementation; tests pass their own.
 */
export interface EventRelay {
  publishNow(events: AuditEvent[]): Promise<void>;
}

/**
 * Publishes what the outbox holds with publisher confirms and marks it sent only after the
 * confirm: at-least-once (a crash between confirm and markSent publishes again; audit stores
 * each event id once). The writer of a change hands its just-stored events to `publishNow`, the
 * fast path that keeps events as prompt as a direct publish; a poll publishes whatever that
 * missed (broker down, process restarted, another instance's writes). Several instances relaying
 * the same store is harmless for the same reason.
 */
export class OutboxRelay implements EventRelay, OutboxBacklogSource {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private again = false;
  private started = false;
  private retryAt = 0;
  private lastFailureLog = 0;
  private failing = false;
  /** Events a publishNow is publishing right now; the poll leaves them alone. */
  private readonly inFlight = new Set<string>();
  /** The publishNow attempts still running: stop and drain wait for them, so none is cut off by an exit. */
  private readonly attempts = new Set<Promise<void>>();
  /**
   * One set per outbox read in progress, collecting every event a publishNow finished meanwhile:
   * such an event can be in what the read returns (read before its markSent) yet no longer in
   * flight when the read comes back, and would be published twice.
   */
  private readonly finishedDuringRead = new Set<Set<string>>();
  private readonly opts: Required<OutboxRelayOptions>;
  /** What the last outbox read found, for the backlog gauges (read on scrape, no query of its own). */
  private lastBacklog: { events: number; oldestMs: number | null } = { events: 0, oldestMs: null };

  constructor(
    private readonly store: OutboxStore,
    private readonly publisher: EventPublisher,
    private readonly logger: Logger,
    options: OutboxRelayOptions = {},
  ) {
    this.opts = {
      pollIntervalMs: options.pollIntervalMs ?? 1_000,
      batchSize: options.batchSize ?? 500,
      publishTimeoutMs: options.publishTimeoutMs ?? 10_000,
      retryDelayMs: options.retryDelayMs ?? 1_000,
      maxUnconfirmed: options.maxUnconfirmed ?? DEFAULT_MAX_UNCONFIRMED,
    };
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    processMetrics().outboxSources.add(this);
    this.schedule();
    this.kick();
  }

  backlog(): { events: number; oldestMs: number | null } {
    return this.lastBacklog;
  }

  /** A local write just added events: publish now (unless the broker failed a moment ago). */
  kick(): void {
    if (!this.started || Date.now() < this.retryAt) return;
    void this.run();
  }

  /**
   * The fast path after a write: publishes these (already stored) events and marks them sent.
   * Never throws. The events are durable in the outbox already, so the caller waits for the
   * confirm only while more than `maxUnconfirmed` publishes await theirs, and then at most `waitMs`
   * (its answer must not hang on a broker); whatever did not make it stays in the outbox for the
   * poll (docs/DECISIONS.md, "Outbox relay pacing").
   */
  async publishNow(events: AuditEvent[], waitMs = 1_000): Promise<void> {
    if (events.length === 0) return;
    const ids = events.map((e) => e.id);
    if (Date.now() < this.retryAt) return; // the broker failed a moment ago: leave it to the poll
    for (const id of ids) this.inFlight.add(id);
    const attempt = (async () => {
      try {
        await withTimeout(this.publisher.publish(events), this.opts.publishTimeoutMs, 'outbox publish');
        await this.store.markSent(ids);
      } catch (err) {
        this.failed(err);
      } finally {
        for (const id of ids) this.inFlight.delete(id);
        for (const finished of this.finishedDuringRead) for (const id of ids) finished.add(id);
      }
    })();
    this.attempts.add(attempt);
    void attempt.finally(() => this.attempts.delete(attempt));
    if (this.attempts.size <= this.opts.maxUnconfirmed) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([attempt, new Promise<void>((r) => (timer = setTimeout(r, waitMs)))]);
    clearTimeout(timer);
  }

  private schedule(): void {
    if (!this.started) return;
    this.timer = setTimeout(() => {
      void this.run().finally(() => this.schedule());
    }, this.opts.pollIntervalMs);
    this.timer.unref();
  }

  private run(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          await this.relayAll();
        } catch (err) {
          this.failed(err);
          return;
        }
      } while (this.again);
    })().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** Publishes until the outbox is empty; throws on the first failed publish. Returns how many were confirmed. */
  async relayAll(): Promise<number> {
    let total = 0;
    for (;;) {
      const finished = new Set<string>();
      this.finishedDuringRead.add(finished);
      let pending: AuditEvent[];
      try {
        pending = await this.store.pendingEvents(this.opts.batchSize);
      } finally {
        this.finishedDuringRead.delete(finished);
      }
      // A publishNow that failed leaves its events in the outbox: the next poll takes them.
      const events = pending.filter((e) => !this.inFlight.has(e.id) && !finished.has(e.id));
      this.lastBacklog = backlogOf(pending);
      if (events.length === 0) break;
      await withTimeout(this.publisher.publish(events), this.opts.publishTimeoutMs, 'outbox publish');
      await this.store.markSent(events.map((e) => e.id));
      total += events.length;
      if (this.failing) {
        this.failing = false;
        this.logger.info('outbox relay publishing again');
      }
      if (pending.length < this.opts.batchSize) {
        // Everything read is confirmed now (in-flight events are being published by publishNow).
        this.lastBacklog = { events: 0, oldestMs: null };
        break;
      }
    }
    return total;
  }

  private failed(err: unknown): void {
    this.failing = true;
    this.retryAt = Date.now() + this.opts.retryDelayMs;
    const now = Date.now();
    // A broker outage fails every attempt: one line per 10 s is enough.
    if (now - this.lastFailureLog < 10_000) return;
    this.lastFailureLog = now;
    this.logger.warn({ err }, 'outbox relay cannot publish; events stay in the outbox and are retried');
  }

  /** Tests and shutdown: waits for the pass in progress, then relays what is left (throws if the broker refuses). */
  async drain(): Promise<number> {
    await this.running;
    await Promise.all(this.attempts);
    return this.relayAll();
  }

  /** Stops polling, waits for the pass in progress and makes one last bounded attempt; what remains stays in the store. */
  async stop(timeoutMs = 5_000): Promise<void> {
    this.started = false;
    processMetrics().outboxSources.delete(this);
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
    try {
      await withTimeout(
        Promise.all(this.attempts).then(() => this.relayAll()),
        timeoutMs,
        'outbox drain',
      );
    } catch (err) {
      this.logger.warn(
        { err },
        'outbox not fully relayed at shutdown; the rest is published after the next start',
      );
    }
  }
}

/**
 * The relay an app runs itself when it was given none: an OutboxRelay over its store and
 * publisher, which the app starts and stops. Undefined when a relay was given (the giver runs it).
 */
export function ownRelayUnlessGiven(deps: {
  relay?: EventRelay;
  store: OutboxStore;
  publisher: EventPublisher;
  logger: Logger;
  outboxPollIntervalMs?: number;
}): OutboxRelay | undefined {
  if (deps.relay) return undefined;
  return new OutboxRelay(deps.store, deps.publisher, deps.logger, {
    pollIntervalMs: deps.outboxPollIntervalMs,
  });
}

function backlogOf(pending: AuditEvent[]): { events: number; oldestMs: number | null } {
  let oldestMs: number | null = null;
  for (const e of pending) {
    const t = Date.parse(e.occurred_at);
    if (!Number.isNaN(t) && (oldestMs === null || t < oldestMs)) oldestMs = t;
  }
  return { events: pending.length, oldestMs };
}
