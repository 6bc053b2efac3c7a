import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
/**
 * Suites that need a tool the machine may lack (Debian's chromium, docker-compose, a MongoDB).
 * A developer's run without the tool reports the suite skipped, saying why; a CI run (`CI=true`)
 * fails instead, because a green CI line must mean every suite ran.
 */
const ON_CI = process.env.CI === 'true';

/** `describe` when `available`; else skipped locally and a failing test on CI, each naming `missing`. */
export function describeIfAvailable(
  available: boolean,
  title: string,
  missing: string,
  body: () => void,
): void {
  if (available) describe(title, body);
  else if (ON_CI) describe(title, () => it(`needs ${missing} on CI`, failMissing(missing)));
  else describe.skip(`${title} (skipped: ${missing})`, body);
}

/** `it` when `available`; else skipped locally and failing on CI, naming `missing`. */
export function itIfAvailable(
  available: boolean,
  title: string,
  missing: string,
  body: jest.ProvidesCallback,
): void {
  if (available) it(title, body);
  else if (ON_CI) it(`${title} (needs ${missing} on CI)`, failMissing(missing));
  else it.skip(`${title} (skipped: ${missing})`, body);
}

const failMissing = (missing: string) => () => {
  throw new Error(`CI=true and ${missing}: install it (.ci/run does) instead of skipping the suite`);
};

/**
 * The longest a test may block on a child process run synchronously (spawnSync, execFileSync).
 * A blocked worker runs no timers, so jest's own test timeout cannot end it: without this bound
 * a hung child would hang the whole run.
 */
export const SYNC_TIMEOUT_MS = 120_000;

/**
 * A fresh temporary directory for each test of the suite, removed after the test: call it once
 * in the describe body, then `dir()` inside a test.
 */
export function tempDirEach(prefix: string): () => string {
  let dir: string | undefined;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), prefix));
  });
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });
  return () => {
    if (!dir) throw new Error('tempDirEach: dir() is only there inside a test');
    return dir;
  };
}
