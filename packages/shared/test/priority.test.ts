import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const ROOT = path.resolve(__dirname, '..', '..', '..');

interface Thread {
  tid: number;
  nice: number;
}

/** The fixture's threads before and after it lowered its priority to `nice`. */
async function niceThreads(nice: number): Promise<{ before: Thread[]; after: Thread[] }> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', path.join(ROOT, 'packages/shared/test/fixtures/nice-threads.ts')],
    { cwd: ROOT, env: { ...process.env, NICE: String(nice) }, timeout: 30_000 },
  );
  return JSON.parse(stdout.trim().split('\n').pop()!) as { before: Thread[]; after: Thread[] };
}

describe('lowerOwnPriority (PROCESS_NICE)', () => {
  it('lowers every thread of the process, the garbage collector’s started before it included, and a thread started later inherits it', async () => {
    const { before, after } = await niceThreads(17);
    // V8's platform threads exist before any service code: the ones setpriority on the pid misses.
    expect(before.filter((t) => t.nice < 17).length).toBeGreaterThan(1);
    for (const t of before) expect(after.find((a) => a.tid === t.tid)).toMatchObject({ nice: 17 });
    const started = after.filter((a) => !before.some((t) => t.tid === a.tid));
    expect(started.length).toBeGreaterThan(0);
    for (const t of started) expect(t).toMatchObject({ nice: 17 });
  });
});
