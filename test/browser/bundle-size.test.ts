import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { SYNC_TIMEOUT_MS } from '@mandate/shared/testing';
import { gzipSync } from 'node:zlib';

const ROOT = path.resolve(__dirname, '../..');
const DIST = path.join(ROOT, 'packages/dashboard/dist');
/** The initial load's budget (issue 28), gzipped; the README states the measured size. */
const BUDGET = 350 * 1024;

/** The files index.html loads at once: its module scripts, preloaded modules and stylesheets. */
function initialAssets(html: string): string[] {
  const urls = [
    ...html.matchAll(/<script[^>]*\ssrc="([^"]+)"/g),
    ...html.matchAll(/<link[^>]*rel="(?:stylesheet|modulepreload)"[^>]*href="([^"]+)"/g),
  ].map((m) => m[1]!);
  return urls.map((u) => path.join(DIST, u.replace(/^\/dashboard\//, '')));
}

describe('dashboard build', () => {
  it('when built, then the JavaScript and CSS of the initial load together are at most 350 KB gzipped', () => {
    const build = spawnSync(process.execPath, ['scripts/build-dashboard.mjs'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: SYNC_TIMEOUT_MS,
    });
    expect(build.status).toBe(0);
    const assets = initialAssets(readFileSync(path.join(DIST, 'index.html'), 'utf8'));
    // Both kinds are there: a script and a stylesheet.
    expect(assets.some((f) => f.endsWith('.js'))).toBe(true);
    expect(assets.some((f) => f.endsWith('.css'))).toBe(true);
    const gzipped = assets.reduce((sum, f) => sum + gzipSync(readFileSync(f)).length, 0);
    expect(gzipped).toBeLessThanOrEqual(BUDGET);
  }, 60_000);
});
