import { readFileSync } from 'node:fs';

/**
 * Per-process counters Linux keeps in /proc, read by the benchmarks (NaN once the process is gone).
 * Every figure is cumulative since the process started: sample twice and subtract.
 */
const read = <T>(file: string, parse: (text: string) => T, gone: T): T => {
  try {
    return parse(readFileSync(file, 'utf8'));
  } catch {
    return gone;
  }
};

/** User and system CPU time in clock ticks (USER_HZ, 100 on Linux), all threads together. */
export const cpuTicks = (pid: number): [user: number, sys: number] =>
  read(
    `/proc/${pid}/stat`,
    (text) => {
      const fields = text.split(') ')[1]!.split(' ');
      return [Number(fields[11]), Number(fields[12])];
    },
    [NaN, NaN],
  );

/**
 * Nanoseconds the main thread spent runnable but waiting for a CPU (schedstat's second field): a
 * request in that thread's socket waits as long, so this names "descheduled" as a cause.
 */
export const runQueueWaitNs = (pid: number): number =>
  read(`/proc/${pid}/schedstat`, (text) => Number(text.split(' ')[1]), NaN);

/** How often the main thread went to sleep of its own accord (each is one wake-up later). */
export const wakeUps = (pid: number): number =>
  read(
    `/proc/${pid}/status`,
    (text) => Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(text)?.[1] ?? NaN),
    NaN,
  );
