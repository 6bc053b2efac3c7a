/**
 * Builds the publishable package into dist/: index.js (verifyOffline, OfflineVerifier) and
 * decide.js (the decision module the verify service runs too), ES modules for Node 20+, and their
 * declarations (tsc). index.js imports ./decide.js rather than a copy of it, so both entry points
 * share one module; jose and Node's built-ins stay imports. Run by `npm pack` and `npm publish`
 * (prepack). The repository itself runs the sources (the root tsconfig's `paths`).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

const PACKAGE = path.resolve(__dirname, '..');
const DIST = path.join(PACKAGE, 'dist');
const ENTRIES = ['index', 'decide'];

async function main(): Promise<void> {
  rmSync(DIST, { recursive: true, force: true });
  await build({
    entryPoints: ENTRIES.map((name) => path.join(PACKAGE, 'src', `${name}.ts`)),
    outdir: DIST,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    external: ['jose'],
    plugins: [
      {
        name: 'entry-points-stay-imports',
        setup(esbuild) {
          // An import of another entry point is left as an import of its built file.
          esbuild.onResolve({ filter: /^\.\/[\w-]+$/ }, (args) =>
            args.importer && ENTRIES.includes(args.path.slice(2))
              ? { path: `${args.path}.js`, external: true }
              : undefined,
          );
        },
      },
    ],
    logLevel: 'warning',
  });
  const tsc = spawnSync(
    process.execPath,
    [require.resolve('typescript/bin/tsc'), '-p', path.join(PACKAGE, 'tsconfig.json')],
    { stdio: 'inherit', timeout: 300_000 },
  );
  if (tsc.status !== 0) throw new Error(`tsc exited with ${tsc.status ?? tsc.signal}`);
  // ES module resolution (Node's, and TypeScript's node16/nodenext) wants each relative import's extension.
  for (const name of readdirSync(DIST).filter((n) => n.endsWith('.d.ts'))) {
    const file = path.join(DIST, name);
    writeFileSync(file, readFileSync(file, 'utf8').replace(/(from '\.\/[\w-]+)'/g, "$1.js'"));
  }
  // The files are ES modules whatever the package.json above them says.
  writeFileSync(path.join(DIST, 'package.json'), JSON.stringify({ type: 'module' }, null, 2) + '\n');
  // On stderr: `npm pack --json` prints its answer on stdout.
  console.error(`built ${path.relative(process.cwd(), DIST)}`);
}

main().catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
