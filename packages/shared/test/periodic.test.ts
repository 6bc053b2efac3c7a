import { eventually } from '../../../test/support/eventually';
import { PeriodicTask } from '../src/periodic';

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
    await eventually(() => (started > 0 ? true : undefined), 10_000, 'the first run to start', 2);
    await task.stop();
    expect(finished).toBe(1);
    // What is under test is that nothing happens: six periods of a running task pass, and no run starts.
    await sleep(30);
    expect(started).toBe(1);
  });
});
