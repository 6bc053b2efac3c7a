/**
 * Builds the publishable package into dist/: one ES module (esbuild, no dependency, nothing but
 * fetch and Web Crypto from the platform) and its declarations (tsc, from src/ whose types are the
 * generated plain ones). Run by `npm pack` and `npm publish` (prepack).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildSync } from 'esbuild';

const PACKAGE = path.resolve(__dirname, '..');
const DIST = path.join(PACKAGE, 'dist');

rmSync(DIST, { recursive: true, force: true });
buildSync({
  entryPoints: [path.join(PACKAGE, 'src/index.ts')],
  outfile: path.join(DIST, 'index.js'),
  bundle: true,
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  sourcemap: true,
  logLevel: 'warning',
});
const tsc = spawnSync(
  process.execPath,
  [require.resolve('typescript/bin/tsc'), '-p', path.join(PACKAGE, 'tsconfig.json')],
  { stdio: 'inherit', timeout: 300_000 },
);
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
// ES module resolution (Node's, and TypeScript's node16/nodenext) wants each relative import's extension.
for (const name of readdirSync(DIST).filter((n) => n.endsWith('.d.ts'))) {
  const file = path.join(DIST, name);
  writeFileSync(file, readFileSync(file, 'utf8').replace(/(from '\.\/[\w-]+)'/g, "$1.js'"));
}
// The files are ES modules whatever the package.json above them says.
writeFileSync(path.join(DIST, 'package.json'), JSON.stringify({ type: 'module' }, null, 2) + '\n');
// On stderr: `npm pack --json` prints its answer on stdout.
console.error(`built ${path.relative(process.cwd(), DIST)}`);
