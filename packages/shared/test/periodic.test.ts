import { eventually } from '../../../test/support/eventually';
import { PeriodicTask } from '../src/core/periodic';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('PeriodicTask', () => {
  it('when a run fails, then onError gets the error and the next tick runs again, never two at once', async () => {
    let active = 0;
    let overlapped = false;
    let runs = 0;
    const errors: unknown[] = [];
    const task = new PeriodicTask(
      5,
      async () => {
        overlapped ||= active > 0;
        active++;
        runs++;
        // A run longer than the 5 ms period: ticks come due while it is still running.
        await sleep(15);
        active--;
        if (runs === 1) throw new Error('first run fails');
      },
      (err) => errors.push(err),
    );
    task.start();
    task.start();
    await eventually(() => (runs >= 3 ? true : undefined), 10_000, 'three runs', 5);
    await task.stop();
    expect(overlapped).toBe(false);
    expect(errors).toEqual([new Error('first run fails')]);
  });

  it('when stopped during a run, then stop() resolves only after that run and no run follows', async () => {
    // Fake timers: "no run follows" is checked over 200 periods and by the timers left, not by a sleep.
    jest.useFakeTimers();
    try {
      let finished = 0;
      let started = 0;
      const task = new PeriodicTask(
        5,
        async () => {
          started++;
          // A run long enough for stop() to be called while it is under way.
          await sleep(30);
          finished++;
        },
        () => undefined,
      );
      task.start();
      await jest.advanceTimersByTimeAsync(5);
      expect(started).toBe(1);
      let stopped = false;
      const stopping = task.stop().then(() => (stopped = true));
      await jest.advanceTimersByTimeAsync(29);
      // Still under way: stop() waits for it.
      expect({ finished, stopped }).toEqual({ finished: 0, stopped: false });
      await jest.advanceTimersByTimeAsync(1);
      await stopping;
      expect(finished).toBe(1);
      await jest.advanceTimersByTimeAsync(1_000);
      expect(started).toBe(1);
      expect(jest.getTimerCount()).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });
});
