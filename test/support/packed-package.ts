/**
 * What the pack tests of the publishable packages (@mandate/client, @mandate/verifier) share: pack
 * a workspace package as npm would publish it, install tarballs alone in a directory with nothing of
 * this repository, type-check a program there and run it under plain Node.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { SYNC_TIMEOUT_MS } from '@mandate/shared/testing';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');
// npm itself, run by this node: the tests do not depend on which npm PATH finds.
const NPM = path.join(path.dirname(process.execPath), '../lib/node_modules/npm/bin/npm-cli.js');

/**
 * `npm pack` run in `cwd` (a workspace package: its prepack builds it first), or of the `extra`
 * spec it names, into `dest`: the tarball's name and its files.
 */
export async function pack(
  cwd: string,
  dest: string,
  extra: string[] = [],
): Promise<{ filename: string; paths: string[] }> {
  const packed = await run(process.execPath, [NPM, 'pack', '--json', '--pack-destination', dest, ...extra], {
    cwd,
    // A build comes first (prepack).
    timeout: 2 * SYNC_TIMEOUT_MS,
  });
  const [{ filename, files }] = JSON.parse(packed.stdout) as [
    { filename: string; files: { path: string }[] },
  ];
  return { filename, paths: files.map((f) => f.path) };
}

/** A new project `<dir>/app` named `name` with only these tarballs installed, offline. */
export async function installAlone(dir: string, name: string, tarballs: string[]): Promise<string> {
  const app = path.join(dir, 'app');
  mkdirSync(app);
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name, private: true, type: 'module' }));
  await run(
    process.execPath,
    [NPM, 'install', '--offline', '--no-audit', '--no-fund', ...tarballs.map((t) => path.join(dir, t))],
    { cwd: app, timeout: SYNC_TIMEOUT_MS },
  );
  return app;
}

/**
 * Writes `program.ts` and `wrong.ts` into the app and compiles them strictly (into `out/`, as ES
 * modules for Node): the compiler's error lines.
 */
export async function typeCheck(app: string, program: string, wrong: string): Promise<string[]> {
  writeFileSync(path.join(app, 'program.ts'), program);
  writeFileSync(path.join(app, 'wrong.ts'), wrong);
  writeFileSync(
    path.join(app, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'es2022',
        module: 'nodenext',
        moduleResolution: 'nodenext',
        lib: ['es2022', 'dom'],
        types: [],
        strict: true,
        outDir: 'out',
      },
      files: ['program.ts', 'wrong.ts'],
    }),
  );
  const output = await run(process.execPath, [TSC, '-p', '.'], { cwd: app, timeout: SYNC_TIMEOUT_MS }).then(
    (r) => r.stdout,
    (err: { stdout: string }) => err.stdout,
  );
  return output.split('\n').filter((line) => /error TS/.test(line));
}

/** The compiled program's `main(...args)` under plain Node (no tsx, no loader): what it printed. */
export async function runMain(app: string, args: string[], env?: NodeJS.ProcessEnv): Promise<string> {
  const answer = await run(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      "const { main } = await import('./out/program.js'); console.log(await main(...process.argv.slice(1)));",
      ...args,
    ],
    { cwd: app, timeout: SYNC_TIMEOUT_MS, ...(env ? { env } : {}) },
  );
  return answer.stdout.trim();
}
