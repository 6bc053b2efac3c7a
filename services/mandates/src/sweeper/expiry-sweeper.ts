import { PeriodicTask, type Clock } from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import { OutboxRelay, type EventPublisher, type EventRelay } from '@mandate/shared/events';
import { expireMandate } from '../domain/mandates';
import type { MandateSnapshots } from '../snapshots/mandate-snapshots';
import type { MandateStore } from '../store/mandate-store';

export interface SweeperDeps {
  store: MandateStore;
  publisher: EventPublisher;
  clock: Clock;
  logger: Logger;
  snapshots?: MandateSnapshots;
  /** The app's relay; absent → one of its own over the same store and publisher. */
  relay?: EventRelay;
}

export interface SweeperOptions {
  intervalMs: number;
  /** Mandates looked at per pass; a pass that fills it runs again at once. */
  batchSize?: number;
}

/**
 * Persists EXPIRED for mandates past expires_at and emits MANDATE_EXPIRED (stored in the outbox
 * with the transition, so it is never lost). Every instance of the service may run one: the
 * domain's conditional transition lets exactly one of them win each mandate, and only the winner emits. Readers never wait for it — expiry already shows
 * at read time; the sweeper makes it durable and audited.
 */
export class ExpirySweeper {
  private readonly periodic: PeriodicTask;
  /** Set by stop(), so that a pass in progress ends after its batch instead of sweeping on. */
  private stopping = false;
  private readonly deps: SweeperDeps & { relay: EventRelay };

  constructor(
    deps: SweeperDeps,
    private readonly options: SweeperOptions,
  ) {
    this.deps = { ...deps, relay: deps.relay ?? new OutboxRelay(deps.store, deps.publisher, deps.logger) };
    this.periodic = new PeriodicTask(
      options.intervalMs,
      () => this.sweepOnce(),
      (err) => this.deps.logger.warn({ err }, 'expiry sweep failed; retrying on the next tick'),
    );
  }

  /** One pass; resolves with how many mandates this instance expired (and announced). */
  async sweepOnce(): Promise<number> {
    const batchSize = this.options.batchSize ?? 100;
    let expired = 0;
    for (;;) {
      const due = await this.deps.store.findDue(this.deps.clock.now(), batchSize);
      let won = 0;
      for (const candidate of due) {
        const result = await expireMandate(this.deps, candidate.tenant_id, candidate.id);
        if (!result) continue;
        // MANDATE_EXPIRED went into the outbox with the transition and was handed to the relay.
        won++;
      }
      expired += won;
      // A full batch that changed nothing is other instances' work in progress; leave it to the next tick.
      if (due.length < batchSize || won === 0 || this.stopping) return expired;
    }
  }

  start(): void {
    this.stopping = false;
    this.periodic.start();
  }

  /** Stops the timer and waits for a pass in progress. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.periodic.stop();
  }
}
