/**
 * `npm run build`: each service's src/main.ts bundled into dist/<service>/main.js, the JavaScript
 * the production images run (`node --enable-source-maps dist/<service>/main.js`) with no
 * transpiler at run time. The workspace packages (@mandate/*) are compiled into each bundle; every
 * npm dependency stays an external `require`, installed by `npm ci --omit=dev` next to dist/.
 * Type checking stays with `npm run typecheck`: esbuild only strips the types.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { build as esbuild } from 'esbuild';
import rootPackage from '../package.json';

const ROOT = path.resolve(__dirname, '..');

export const SERVICES = ['gateway', 'mandates', 'verify', 'identity', 'audit'] as const;

/**
 * The oldest Node the bundles must run on: development and CI run on Node 20, the images on 22
 * (package.json `engines`). esbuild lowers any syntax newer than this.
 */
const TARGET = 'node20';

/** Left as `require`s: the production dependencies, with their subpaths (`zod/v4`, `@aws-sdk/…/x`). */
const EXTERNAL = Object.keys(rootPackage.dependencies).flatMap((name) => [name, `${name}/*`]);

export interface BuildResult {
  /** dist/<service>/main.js for each service. */
  entries: Record<(typeof SERVICES)[number], string>;
  /** What each bundle still `require`s at run time: node built-ins and npm dependencies. */
  requires: Record<(typeof SERVICES)[number], string[]>;
}

/** Writes the five bundles (and their source maps) into `outDir`, emptied first. */
export async function buildServices(outDir: string = path.join(ROOT, 'dist')): Promise<BuildResult> {
  rmSync(outDir, { recursive: true, force: true });
  const result = await esbuild({
    absWorkingDir: ROOT,
    entryPoints: SERVICES.map((name) => ({
      in: path.join(ROOT, 'services', name, 'src', 'main.ts'),
      out: path.join(name, 'main'),
    })),
    outdir: outDir,
    bundle: true,
    platform: 'node',
    target: TARGET,
    format: 'cjs',
    sourcemap: true,
    external: EXTERNAL,
    metafile: true,
    logLevel: 'warning',
  });
  // A package outside `dependencies` (a devDependency, or one only installed transitively) would
  // be compiled into the bundle here and silently pinned; the image would not have it to update.
  const bundledPackages = Object.keys(result.metafile.inputs).filter((input) =>
    input.split(/[\\/]/).includes('node_modules'),
  );
  if (bundledPackages.length > 0) {
    throw new Error(
      `these modules are not production dependencies of the root package.json, so they were bundled: ${bundledPackages.join(', ')}`,
    );
  }
  const outputOf = (name: string) =>
    Object.entries(result.metafile.outputs).find(
      ([file]) => path.resolve(ROOT, file) === path.join(outDir, name, 'main.js'),
    )![1];
  return {
    entries: Object.fromEntries(
      SERVICES.map((name) => [name, path.join(outDir, name, 'main.js')]),
    ) as BuildResult['entries'],
    requires: Object.fromEntries(
      SERVICES.map((name) => [
        name,
        [
          ...new Set(
            outputOf(name)
              .imports.filter((i) => i.external)
              .map((i) => i.path),
          ),
        ].sort(),
      ]),
    ) as BuildResult['requires'],
  };
}

async function main(): Promise<void> {
  const outDir = path.resolve(process.argv[2] ?? path.join(ROOT, 'dist'));
  const started = Date.now();
  const { entries } = await buildServices(outDir);
  for (const [name, file] of Object.entries(entries)) {
    process.stdout.write(`${name}: ${path.relative(process.cwd(), file)}\n`);
  }
  process.stdout.write(`built in ${Date.now() - started} ms\n`);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
