/* global process, setInterval, clearInterval, module */
// A jest reporter that names the test files still running long after they started. A file that
// blocks its worker (a synchronous child process, an endless synchronous loop) is never ended by
// jest's own timeouts, and the run then waits with no output at all; this says which file it is.
// Plain CommonJS: jest loads reporters without a transform.
const REPORT_AFTER_MS = Number(process.env.JEST_RUNNING_REPORT_AFTER_MS) || 10 * 60_000;
const CHECK_EVERY_MS = Math.min(60_000, REPORT_AFTER_MS);

class RunningSuitesReporter {
  constructor() {
    this.running = new Map();
    this.timer = setInterval(() => this.report(), CHECK_EVERY_MS);
    // Never what keeps jest alive.
    this.timer.unref();
  }

  onTestStart(test) {
    this.running.set(test.path, Date.now());
  }

  onTestResult(test) {
    this.running.delete(test.path);
  }

  onRunComplete() {
    clearInterval(this.timer);
  }

  report() {
    const now = Date.now();
    for (const [file, started] of this.running) {
      const ms = now - started;
      if (ms >= REPORT_AFTER_MS)
        process.stderr.write(
          `still running after ${Math.round(ms / 1000)} s: ${file.replace(`${process.cwd()}/`, '')}\n`,
        );
    }
  }
}

module.exports = RunningSuitesReporter;
