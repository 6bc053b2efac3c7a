/* global process, console */
/**
 * Builds the dashboard (packages/dashboard → packages/dashboard/dist), which the gateway serves at
 * /dashboard/. Run by `npm install`/`npm ci` (postinstall) and by `npm start` (prestart) when the
 * build is missing or older than its sources. Where it cannot build it says why and exits 0, so an
 * install never fails on it: an install without dev dependencies (no Vite, e.g. the Docker image's
 * `npm ci --omit=dev`) or without the dashboard's sources (the Docker manifests stage).
 *
 *   node scripts/build-dashboard.mjs            build when missing or outdated
 *   node scripts/build-dashboard.mjs --force    build always
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const pkg = path.join(root, 'packages/dashboard');
const built = path.join(pkg, 'dist/index.html');
// The API client and the decision module (the reasons in words) are bundled from their sources
// (packages/client/src, packages/verifier/src): a change there is a change of the dashboard.
const sources = [
  ...['src', 'index.html', 'vite.config.ts', 'package.json'].map((p) => path.join(pkg, p)),
  path.join(root, 'packages/client/src'),
  path.join(root, 'packages/verifier/src'),
];

function newest(p) {
  if (!existsSync(p)) return 0;
  const s = statSync(p);
  if (!s.isDirectory()) return s.mtimeMs;
  return Math.max(0, ...readdirSync(p).map((name) => newest(path.join(p, name))));
}

if (!existsSync(path.join(pkg, 'src'))) {
  console.log('dashboard: no sources here, not built');
  process.exit(0);
}
let vite;
try {
  const manifest = createRequire(path.join(pkg, 'package.json')).resolve('vite/package.json');
  vite = path.join(path.dirname(manifest), 'bin/vite.js');
} catch {
  console.log('dashboard: Vite is not installed (production install?), not built');
  process.exit(0);
}
const force = process.argv.includes('--force');
if (!force && existsSync(built) && statSync(built).mtimeMs >= Math.max(...sources.map(newest))) {
  process.exit(0);
}
console.log('dashboard: building packages/dashboard/dist');
// A production build whatever the caller's NODE_ENV (jest sets "test", which would bundle React's development build).
const run = spawnSync(process.execPath, [vite, 'build', '--logLevel', 'warn'], {
  cwd: pkg,
  stdio: 'inherit',
  env: { ...process.env, NODE_ENV: 'production' },
});
process.exit(run.status ?? 1);
