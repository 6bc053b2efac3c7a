/**
 * Runs an async task every intervalMs while started. The next run is scheduled only when the
 * previous one has settled, so two runs never overlap; a failed run goes to onError and the next
 * tick tries again. stop() waits for a run in progress, so the caller may close what the task uses.
 */
export class PeriodicTask {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private started = false;

  constructor(
    private readonly intervalMs: number,
    private readonly task: () => Promise<unknown>,
    private readonly onError: (err: unknown) => void,
  ) {}

  start(): void {
    if (this.started) return;
    this.started = true;
    this.schedule();
  }

  private schedule(): void {
    if (!this.started) return;
    this.timer = setTimeout(() => {
      this.running = this.task()
        .then(() => undefined, this.onError)
        .finally(() => {
          this.running = undefined;
          this.schedule();
        });
    }, this.intervalMs);
    // Housekeeping on a timer must never be what keeps a process alive.
    this.timer.unref();
  }

  /** Stops the timer and waits for a run in progress. */
  async stop(): Promise<void> {
    this.started = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
