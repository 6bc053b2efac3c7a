import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/**
 * Raises the nice value of every thread of this process to at least `nice` (docs/DEPLOYMENT.md,
 * "CPU priority"). On Linux a nice value belongs to a thread, not a process: setpriority on the
 * process id changes the main thread only. V8's garbage-collector and compiler threads start
 * before any service code runs, so they would keep the old priority, and a parallel scavenge
 * would take a CPU from the request path at full priority. Threads started later (libuv's pool,
 * workers) inherit the main thread's value. Without /proc (not Linux) only the calling thread is
 * changed. Throws when the main thread cannot be changed; a thread that exits meanwhile is skipped.
 */
export function lowerOwnPriority(nice: number): void {
  setPriority(Math.max(getPriority(), nice));
  for (const tid of ownThreadIds()) {
    try {
      setPriority(tid, Math.max(getPriority(tid), nice));
    } catch {
      // Gone since the listing, or not ours to change: nothing to lower.
    }
  }
}

function ownThreadIds(): number[] {
  try {
    return readdirSync('/proc/self/task').map(Number).filter(Number.isInteger);
  } catch {
    return [];
  }
}
