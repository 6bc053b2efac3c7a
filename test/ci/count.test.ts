import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * .ci/count turns a jest run into CI's one line. It is run here on a two-file fixture suite, not on
 * the whole tree: one file passes, one cannot load (an import error), one skips a test.
 */
const ROOT = path.resolve(__dirname, '../..');
const FIXTURE_CONFIG = path.join(__dirname, 'fixture/jest.config.js');
/** Each case starts a jest of its own: slow on a loaded machine. */
const NESTED_JEST_MS = 120_000;

async function count(
  jestArgs: string[],
  config = FIXTURE_CONFIG,
): Promise<{ code: number; lastLine: string }> {
  const env = { ...process.env, JEST_JSON_OUTPUT: '' };
  const run = promisify(execFile)(
    path.join(ROOT, '.ci/count'),
    ['npx', 'jest', '--config', config, ...jestArgs],
    { cwd: ROOT, env },
  );
  const settled = await run.then(
    (ok) => ({ code: 0, stdout: ok.stdout }),
    (err: { code: number; stdout: string }) => ({ code: err.code, stdout: err.stdout }),
  );
  const lines = settled.stdout.trim().split('\n');
  return { code: settled.code, lastLine: lines[lines.length - 1]! };
}

describe('.ci/count', () => {
  it(
    'when a test file fails to load, then the line counts it as failed and the run exits non-zero',
    async () => {
      const { code, lastLine } = await count(['--testPathPatterns', 'passing|broken']);
      expect(lastLine).toBe('1 passed, 1 failed, 0 skipped');
      expect(code).not.toBe(0);
    },
    NESTED_JEST_MS,
  );

  it(
    'when every file loads and passes, then the line says 0 failed and the run exits 0',
    async () => {
      const { code, lastLine } = await count(['--testPathPatterns', 'passing']);
      expect(lastLine).toBe('1 passed, 0 failed, 0 skipped');
      expect(code).toBe(0);
    },
    NESTED_JEST_MS,
  );

  it(
    'when a test is skipped and nothing failed, then the line counts it and the run exits non-zero',
    async () => {
      const { code, lastLine } = await count(['--testPathPatterns', 'skipped']);
      expect(lastLine).toBe('1 passed, 0 failed, 1 skipped');
      expect(code).not.toBe(0);
    },
    NESTED_JEST_MS,
  );

  it(
    'when the command fails before jest writes results, then the line says 1 failed',
    async () => {
      const { code, lastLine } = await count([], path.join(__dirname, 'fixture/no-such.config.js'));
      expect(lastLine).toMatch(/^0 passed, 1 failed, 0 skipped$/);
      expect(code).not.toBe(0);
    },
    NESTED_JEST_MS,
  );
});
