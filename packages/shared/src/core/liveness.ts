/**
 * The liveness probe (`/livez`, docs/DEPLOYMENT.md#liveness): it fails only when a
 * dependency the service cannot work without has been unreachable for longer than
 * `LIVENESS_FAIL_AFTER_MS` (default 60 s), never for a shorter outage. A process whose driver got
 * stuck after an outage (the dependency is back, this process still cannot reach it) is then
 * restarted by its supervisor (Kubernetes, docker-compose, `npm run start:services`); /readyz only
 * takes it out of rotation.
 */

/** Default of `LIVENESS_FAIL_AFTER_MS`. */
export const DEFAULT_LIVENESS_FAIL_AFTER_MS = 60_000;
/** The longest /livez waits for the dependency checks: a hung dependency counts as down, the probe still answers. */
export const LIVENESS_CHECK_TIMEOUT_MS = 5_000;

let failAfterMs = DEFAULT_LIVENESS_FAIL_AFTER_MS;

/** Set once at start from the configuration (startService); every service in the process shares it. */
export function configureLiveness(options: { failAfterMs?: number }): void {
  if (options.failAfterMs !== undefined) failAfterMs = options.failAfterMs;
}

/** A check's value counts as down unless it is `ok` or `degraded…` (the rule /readyz uses too). */
export const isCheckUp = (value: string) => value === 'ok' || value.startsWith('degraded');

export interface LivenessAnswer {
  status: 200 | 503;
  body: { status: 'alive' | 'stuck'; fail_after_ms: number; checks: Record<string, string> };
}

/**
 * Remembers, per dependency check, since when it has been down: /readyz and /livez both report
 * what they saw, so the time is measured from the first failed check either probe ran.
 */
export class LivenessTracker {
  private readonly downSince = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  observe(checks: Record<string, string>): void {
    const at = this.now();
    for (const [name, value] of Object.entries(checks)) {
      if (isCheckUp(value)) this.downSince.delete(name);
      else if (!this.downSince.has(name)) this.downSince.set(name, at);
    }
  }

  answer(checks: Record<string, string>): LivenessAnswer {
    this.observe(checks);
    const at = this.now();
    const bound = failAfterMs;
    let stuck = false;
    const reported: Record<string, string> = {};
    for (const [name, value] of Object.entries(checks)) {
      const since = this.downSince.get(name);
      if (since === undefined) {
        reported[name] = value;
        continue;
      }
      const downMs = at - since;
      if (downMs > bound) stuck = true;
      reported[name] =
        `${value} (down for ${Math.round(downMs / 1000)} s; liveness fails after ${Math.round(bound / 1000)} s)`;
    }
    return {
      status: stuck ? 503 : 200,
      body: { status: stuck ? 'stuck' : 'alive', fail_after_ms: bound, checks: reported },
    };
  }
}

/** The service's readiness checks, bounded by LIVENESS_CHECK_TIMEOUT_MS; a throw or a timeout is one down check. */
export async function boundedChecks(
  readiness: () => Promise<Record<string, string>>,
): Promise<Record<string, string>> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Record<string, string>>((resolve) => {
    timer = setTimeout(
      () => resolve({ checks: `down: no answer within ${LIVENESS_CHECK_TIMEOUT_MS} ms` }),
      LIVENESS_CHECK_TIMEOUT_MS,
    );
  });
  try {
    return await Promise.race([
      readiness().catch((err: unknown) => ({ checks: `down: ${String(err)}` })),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
