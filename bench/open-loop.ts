/**
 * An open-loop load generator for `BENCH_MODE=open npm run bench:verify`: requests leave on a
 * uniform schedule (request i at start + i / rate), whatever the answers do, and each latency is
 * counted from the request's planned send time, so time a request spends waiting for a free
 * connection or behind a late timer counts too (no coordinated omission). autocannon, a closed
 * loop, measures only at saturation.
 */
import { Pool } from 'undici';

export interface OpenLoopRequest {
  method: 'POST';
  path: string;
  headers: Record<string, string>;
  body: string;
}

export interface OpenLoopResult {
  /** Requests sent (the schedule's length). */
  sent: number;
  /** Answers that were not 2xx, and requests that failed without an answer. */
  non2xx: number;
  errors: number;
  /** Milliseconds from planned send time to the end of the answer. */
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** How late, at worst, the generator itself sent a request (its own delay, for honesty). */
  maxSendLagMs: number;
  /** With `idPrefix`: each request's id (`<idPrefix>-<i>`, sent as X-Request-Id) and its times, for the breakdown. */
  samples?: OpenLoopSample[];
}

/** One request's times on the machine's monotonic clock (ms, as markRequest records them). */
export interface OpenLoopSample {
  id: string;
  planned: number;
  sent: number;
  done: number;
  latency: number;
}

/**
 * Sends `rate` requests a second for `durationSeconds` to `origin`, cycling through `requests`, over
 * at most `connections` keep-alive connections (queued requests wait for one, and that wait counts).
 */
export async function openLoop(
  origin: string,
  requests: OpenLoopRequest[],
  rate: number,
  durationSeconds: number,
  options: { connections?: number; idPrefix?: string } = {},
): Promise<OpenLoopResult> {
  const { connections = 64, idPrefix } = options;
  const pool = new Pool(origin, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const total = Math.round(rate * durationSeconds);
  const intervalMs = 1000 / rate;
  const latencies = new Float64Array(total);
  const sentAt = new Float64Array(total);
  // performance.now() → process.hrtime in ms, the clock the services' marks use.
  const toMonotonic = Number(process.hrtime.bigint()) / 1e6 - performance.now();
  let non2xx = 0;
  let errors = 0;
  const inFlight: Promise<void>[] = [];
  const start = performance.now() + 20;

  const send = (i: number, planned: number) => {
    const request = requests[i % requests.length]!;
    const headers = idPrefix ? { ...request.headers, 'x-request-id': `${idPrefix}-${i}` } : request.headers;
    sentAt[i] = performance.now();
    return pool
      .request({ method: request.method, path: request.path, headers, body: request.body })
      .then(async (res) => {
        await res.body.dump();
        if (res.statusCode < 200 || res.statusCode >= 300) non2xx++;
      })
      .catch(() => {
        errors++;
      })
      .finally(() => {
        latencies[i] = performance.now() - planned;
      });
  };

  const maxSendLagMs = await onSchedule(start, intervalMs, total, (i, planned) =>
    inFlight.push(send(i, planned)),
  );
  await Promise.all(inFlight);
  await pool.close();

  const sorted = Array.from(latencies).sort((a, b) => a - b);
  const at = (q: number) => round2(sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!);
  return {
    sent: total,
    non2xx,
    errors,
    p50: at(0.5),
    p90: at(0.9),
    p99: at(0.99),
    max: round2(sorted[sorted.length - 1]!),
    maxSendLagMs: round2(maxSendLagMs),
    ...(idPrefix ? { samples: samplesOf(idPrefix, latencies, sentAt, start, intervalMs, toMonotonic) } : {}),
  };
}

/**
 * Calls `fire(i, planned)` for request i at start + i * intervalMs, for `total` requests; resolves
 * when the last has left, with how late, at worst, one left.
 */
function onSchedule(
  start: number,
  intervalMs: number,
  total: number,
  fire: (i: number, planned: number) => void,
): Promise<number> {
  let maxSendLagMs = 0;
  let next = 0;
  return new Promise<number>((resolve) => {
    const tick = () => {
      const now = performance.now();
      while (next < total && start + next * intervalMs <= now) {
        const planned = start + next * intervalMs;
        maxSendLagMs = Math.max(maxSendLagMs, now - planned);
        fire(next, planned);
        next++;
      }
      if (next >= total) return resolve(maxSendLagMs);
      // Sleep until the next planned send; setTimeout may wake late, which the latency then shows.
      const wait = start + next * intervalMs - performance.now();
      if (wait > 1) setTimeout(tick, Math.floor(wait));
      else setImmediate(tick);
    };
    tick();
  });
}

/** Each request's id and times on the monotonic clock. */
function samplesOf(
  idPrefix: string,
  latencies: Float64Array,
  sentAt: Float64Array,
  start: number,
  intervalMs: number,
  toMonotonic: number,
): OpenLoopSample[] {
  return Array.from(latencies, (latency, i) => {
    const planned = start + i * intervalMs + toMonotonic;
    return {
      id: `${idPrefix}-${i}`,
      planned,
      sent: sentAt[i]! + toMonotonic,
      done: planned + latency,
      latency,
    };
  });
}

const round2 = (x: number) => Math.round(x * 100) / 100;
