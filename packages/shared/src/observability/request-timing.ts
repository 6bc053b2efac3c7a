/**
 * Per-request timestamps for the benchmark's latency breakdown (`BENCH_MODE=open npm run
 * bench:verify`): where a slow request spent its time, step by step, across the gateway and
 * verify. Only bench/probe.cjs, which the benchmark alone preloads, installs the recorder on
 * globalThis (before any module loads) and switches it on for a measured window; in every other
 * process `markRequest` returns at its first line and records nothing.
 *
 * Times are CLOCK_MONOTONIC in milliseconds (process.hrtime), one clock for every process of the
 * machine, so a gateway's mark and a verify's mark of one request can be subtracted.
 */
interface RequestTimingRecorder {
  on: boolean;
  /** Flat triples: request id, step, time (ms). */
  marks: (string | number)[];
}

const recorder = (globalThis as { __mandateRequestTiming?: RequestTimingRecorder }).__mandateRequestTiming;

/** Records that request `requestId` reached `step` now (only under the benchmark's probe). */
export function markRequest(requestId: string | string[] | undefined, step: string): void {
  if (recorder === undefined || !recorder.on || typeof requestId !== 'string') return;
  recorder.marks.push(requestId, step, Number(process.hrtime.bigint()) / 1e6);
}

/** Whether this process runs under the benchmark's probe (marks may be recorded at all). */
export function requestTimingInstalled(): boolean {
  return recorder !== undefined;
}
