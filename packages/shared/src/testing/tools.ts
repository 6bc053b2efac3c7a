import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
/**
 * Suites that need a tool the machine may lack (Debian's chromium, docker-compose, a MongoDB).
 * Without the tool the suite is one failing test naming what to install, on a developer's machine
 * as on CI: a skipped suite would pass silently, and a green line must mean every suite ran
 * (docs/TESTING.md, "Nothing skipped").
 */

/** `describe` when `available`; else one failing test naming `missing`. */
export function describeIfAvailable(
  available: boolean,
  title: string,
  missing: string,
  body: () => void,
): void {
  if (available) describe(title, body);
  else describe(title, () => it(`needs ${missing}`, failMissing(missing)));
}

/** `it` when `available`; else a failing test naming `missing`. */
export function itIfAvailable(
  available: boolean,
  title: string,
  missing: string,
  body: jest.ProvidesCallback,
): void {
  if (available) it(title, body);
  else it(`${title} (needs ${missing})`, failMissing(missing));
}

const failMissing = (missing: string) => () => {
  throw new Error(`${missing}: install it (.ci/run does) instead of skipping the suite`);
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
