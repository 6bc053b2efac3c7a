import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { SYNC_TIMEOUT_MS } from '@mandate/shared/testing';
import { gzipSync } from 'node:zlib';

const ROOT = path.resolve(__dirname, '../..');
const ASSETS = path.join(ROOT, 'packages/dashboard/dist/assets');
const BUDGET = 300 * 1024;

describe('dashboard build', () => {
  it('when built, then all of its JavaScript together is at most 300 KB gzipped', () => {
    const build = spawnSync(process.execPath, ['scripts/build-dashboard.mjs'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: SYNC_TIMEOUT_MS,
    });
    expect(build.status).toBe(0);
    const scripts = readdirSync(ASSETS).filter((f) => f.endsWith('.js'));
    expect(scripts.length).toBeGreaterThan(0);
    const gzipped = scripts.reduce((sum, f) => sum + gzipSync(readFileSync(path.join(ASSETS, f))).length, 0);
    expect(gzipped).toBeLessThanOrEqual(BUDGET);
  }, 60_000);
});
