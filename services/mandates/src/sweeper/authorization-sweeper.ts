import { PeriodicTask } from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import { expireAuthorization } from '../domain/authorizations';
import type { TransitionDeps } from '../domain/mandates';

/**
 * Persists EXPIRED for HELD authorizations past expires_at, releasing their holds, and emits
 * AUTHORIZATION_EXPIRED once (docs/API.md#budgets): every instance may run one, the store's
 * conditional write lets exactly one of them settle each authorization. Readers never wait for
 * it — an authorization past expires_at already reads EXPIRED.
 */
export class AuthorizationSweeper {
  private readonly periodic: PeriodicTask;
  private stopping = false;

  constructor(
    private readonly deps: TransitionDeps & { logger: Logger },
    private readonly options: { intervalMs: number; batchSize?: number },
  ) {
    this.periodic = new PeriodicTask(
      options.intervalMs,
      () => this.sweepOnce(),
      (err) => this.deps.logger.warn({ err }, 'authorization expiry sweep failed; retrying on the next tick'),
    );
  }

  /** One pass; resolves with how many authorizations this instance expired. */
  async sweepOnce(): Promise<number> {
    const batchSize = this.options.batchSize ?? 100;
    let expired = 0;
    for (;;) {
      const due = await this.deps.store.authorizations.findDueAuthorizations(
        this.deps.clock.now(),
        batchSize,
      );
      let won = 0;
      for (const candidate of due) {
        if (await expireAuthorization(this.deps, candidate.tenant_id, candidate.id)) won++;
      }
      expired += won;
      if (due.length < batchSize || won === 0 || this.stopping) return expired;
    }
  }

  start(): void {
    this.stopping = false;
    this.periodic.start();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.periodic.stop();
  }
}
