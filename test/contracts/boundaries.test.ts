import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const SERVICES = ['mandates', 'verify', 'identity', 'audit'] as const;
/** Every service, the gateway included: each folder of services/. */
const ALL_SERVICES = readdirSync(path.join(ROOT, 'services'));

function filesUnder(dir: string, skip?: RegExp): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (skip?.test(full)) return [];
    return statSync(full).isDirectory()
      ? filesUnder(full, skip)
      : /\.(tsx?|[mc]?js)$/.test(full)
        ? [full]
        : [];
  });
}
/** Static, dynamic, side-effect imports and requires. */
const IMPORT = /(?:\bfrom\s+|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)['"]([^'"]+)['"]/gm;
const importsOf = (file: string) => [...readFileSync(file, 'utf8').matchAll(IMPORT)].map((m) => m[1]!);

/** The service a specifier points into (undefined for the packages — shared kernel, verifier, … — and libraries). */
function serviceOf(file: string, spec: string): string | undefined {
  const pkg = /^@mandate\/([a-z-]+)/.exec(spec);
  if (pkg) return ALL_SERVICES.includes(pkg[1]!) ? pkg[1] : undefined;
  if (!spec.startsWith('.')) return undefined;
  const relative = path.relative(path.join(ROOT, 'services'), path.resolve(path.dirname(file), spec));
  return relative.startsWith('..') ? undefined : relative.split(path.sep)[0];
}

/** Each workspace package by name: its folder and the subpaths its package.json `exports` (its entry alone without). */
const WORKSPACE = new Map(
  ['packages', 'services']
    .flatMap((dir) => readdirSync(path.join(ROOT, dir)).map((name) => path.join(ROOT, dir, name)))
    .filter((dir) => existsSync(path.join(dir, 'package.json')))
    .map((dir) => {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
        name: string;
        exports?: Record<string, unknown>;
      };
      return [pkg.name, { dir, subpaths: Object.keys(pkg.exports ?? { '.': null }) }] as const;
    }),
);

/** A workspace package named with a subpath it does not export: `@mandate/verifier/src/decide`, say. */
function notExported(spec: string): boolean {
  const named = /^(@mandate\/[a-z-]+)(\/.*)?$/.exec(spec);
  const pkg = named && WORKSPACE.get(named[1]!);
  return pkg !== undefined && pkg !== null && !pkg.subpaths.includes(`.${named![2] ?? ''}`);
}

/** Every source file of the repository but dependencies, builds and test fixtures. */
const everySourceFile = () => [
  ...['services', 'packages', 'test', 'bench', 'scripts'].flatMap((dir) =>
    filesUnder(path.join(ROOT, dir), /[\\/](node_modules|dist|fixture)$/),
  ),
  ...readdirSync(ROOT)
    .filter((name) => /\.(tsx?|[mc]?js)$/.test(name))
    .map((name) => path.join(ROOT, name)),
];

/** The public contract is each service's package entry; the gateway knows the services by nothing else. */
describe('contract boundaries', () => {
  it('when the gateway source is read, then it imports no other service but through its package entry', () => {
    const offending = filesUnder(path.join(ROOT, 'services/gateway/src')).flatMap((file) =>
      importsOf(file)
        .filter(
          (spec) =>
            /^@mandate\/(mandates|verify|identity|audit)\//.test(spec) ||
            (spec.startsWith('.') &&
              !path.resolve(path.dirname(file), spec).startsWith(path.join(ROOT, 'services/gateway'))),
        )
        .map((spec) => `${path.relative(ROOT, file)}: ${spec}`),
    );
    expect(offending).toEqual([]);
  });

  // Tests that need two services live under test/: a service's own tests stay inside it. Code calls
  // another service only through that service's contract (its package entry, ContractClient).
  it.each([...SERVICES, 'gateway'])(
    "when %s's tests and (but for contract imports) code are read, then none imports another service",
    (service) => {
      const crossings = filesUnder(path.join(ROOT, 'services', service))
        .filter((file) => !file.includes(`${path.sep}node_modules${path.sep}`))
        .flatMap((file) =>
          importsOf(file)
            .filter((spec) => {
              const target = serviceOf(file, spec);
              if (!target || target === service) return false;
              // A service's code may import another's package entry (its contract), nothing else.
              const code = !file.includes(`${path.sep}test${path.sep}`);
              return !(code && /^@mandate\/[a-z-]+$/.test(spec));
            })
            .map((spec) => `${path.relative(ROOT, file)}: ${spec}`),
        );
      expect(crossings).toEqual([]);
    },
  );

  // The packages (the kernel, the verifier, the evidence CLI, the dashboard), tests included, know a
  // service by its package entry (its contract) at most, never by its src.
  it('when the packages and their tests are read, then none imports a service but through its package entry', () => {
    const offending = filesUnder(path.join(ROOT, 'packages'), /[\\/](node_modules|dist)$/).flatMap((file) =>
      importsOf(file)
        .filter((spec) => {
          const target = serviceOf(file, spec);
          return target !== undefined && !/^@mandate\/[a-z-]+$/.test(spec);
        })
        .map((spec) => `${path.relative(ROOT, file)}: ${spec}`),
    );
    expect(offending).toEqual([]);
  });

  // Outside the services (tests, benchmarks, launchers, packages), a service is known by its package:
  // its entry (the contract), `/service` (what a launcher starts) and `/testing` (what a test or a
  // benchmark assembles it from in-process) — never a path into its src or its tests.
  const OUTSIDE = ['test', 'bench', 'scripts', 'packages'];
  const SERVICE_PACKAGE = /^@mandate\/[a-z-]+(\/service|\/testing)?$/;
  it('when the files outside the services are read, then each reaches a service only through its package', () => {
    const outside = [
      ...OUTSIDE.flatMap((dir) => filesUnder(path.join(ROOT, dir), /[\\/](node_modules|dist|fixture)$/)),
      ...readdirSync(ROOT)
        .filter((name) => /\.(tsx?|[mc]?js)$/.test(name))
        .map((name) => path.join(ROOT, name)),
    ];
    expect(outside.length).toBeGreaterThan(100);
    const offending = outside.flatMap((file) =>
      importsOf(file)
        .filter((spec) => serviceOf(file, spec) !== undefined && !SERVICE_PACKAGE.test(spec))
        .map((spec) => `${path.relative(ROOT, file)}: ${spec}`),
    );
    expect(offending).toEqual([]);
  });

  it.each(ALL_SERVICES)(
    "when %s's package.json is read, then runtime (exports) and type checking (typesVersions) name the same entries",
    (service) => {
      const pkg = JSON.parse(readFileSync(path.join(ROOT, 'services', service, 'package.json'), 'utf8')) as {
        main: string;
        exports: Record<string, string>;
        typesVersions: { '*': Record<string, string[]> };
      };
      expect(Object.keys(pkg.exports)).toEqual(['.', './service', './testing']);
      expect(pkg.exports['.']).toBe(`./${pkg.main}`);
      for (const [subpath, target] of Object.entries(pkg.exports).filter(([key]) => key !== '.')) {
        expect(pkg.typesVersions['*'][subpath.slice(2)]).toEqual([target.slice(2)]);
        expect(statSync(path.join(ROOT, 'services', service, target)).isFile()).toBe(true);
      }
    },
  );

  // What a package exports is what it promises; a path into its src is not, and a published one
  // (@mandate/verifier) has no src at all. Node, tsx and jest refuse such a path at run time; tsc's
  // node10 resolution would not, so it is refused here.
  it('when any file imports a workspace package by name, then it names a subpath the package exports', () => {
    const files = everySourceFile();
    expect(files.length).toBeGreaterThan(300);
    const offending = files.flatMap((file) =>
      importsOf(file)
        .filter(notExported)
        .map((spec) => `${path.relative(ROOT, file)}: ${spec}`),
    );
    expect(offending).toEqual([]);
  });

  // The verifier is published alone: whatever uses it in this repository uses it as an integrator would.
  it('when the files outside packages/verifier are read, then none reaches into it by a relative path', () => {
    const verifier = WORKSPACE.get('@mandate/verifier')!.dir;
    const offending = everySourceFile()
      .filter((file) => !file.startsWith(verifier + path.sep))
      .flatMap((file) =>
        importsOf(file)
          .filter((spec) => spec.startsWith('.'))
          .filter((spec) => {
            const target = path.resolve(path.dirname(file), spec);
            return target === verifier || target.startsWith(verifier + path.sep);
          })
          .map((spec) => `${path.relative(ROOT, file)}: ${spec}`),
      );
    expect(offending).toEqual([]);
  });

  it('when a specifier names a workspace package, then only the subpaths its package.json exports pass', () => {
    expect(notExported('@mandate/verifier/src/decide')).toBe(true);
    expect(notExported('@mandate/verifier/src/index.ts')).toBe(true);
    expect(notExported('@mandate/mandates/src/app')).toBe(true);
    expect(notExported('@mandate/test-wallet/src/wallet')).toBe(true);
    expect(notExported('@mandate/verifier')).toBe(false);
    expect(notExported('@mandate/verifier/decide')).toBe(false);
    expect(notExported('@mandate/shared/testing')).toBe(false);
    expect(notExported('@mandate/verify/service')).toBe(false);
    expect(notExported('jose')).toBe(false);
  });

  it('when the import pattern reads a file, then it finds static, dynamic, side-effect imports and requires', () => {
    const sample = [
      "import { a } from '../x';",
      "import './y';",
      "const z = await import('@mandate/verify');",
      "require('w')",
    ];
    const file = path.join(ROOT, 'test', 'contracts', 'sample.ts');
    expect(sample.flatMap((line) => [...line.matchAll(IMPORT)].map((m) => m[1]))).toEqual([
      '../x',
      './y',
      '@mandate/verify',
      'w',
    ]);
    expect(serviceOf(file, '../../services/mandates/src/app')).toBe('mandates');
    expect(serviceOf(file, '@mandate/gateway/testing')).toBe('gateway');
    expect(serviceOf(file, '@mandate/shared/testing')).toBeUndefined();
    expect(SERVICE_PACKAGE.test('@mandate/mandates/src/app')).toBe(false);
    expect(SERVICE_PACKAGE.test('@mandate/mandates/testing')).toBe(true);
  });

  it.each(SERVICES)("when %s's package.json is read, then its entry is its contract", (service) => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'services', service, 'package.json'), 'utf8')) as {
      main: string;
    };
    expect(pkg.main).toMatch(/^src\/contract(\.ts|\/index\.ts)$/);
  });

  // The verify decision's vocabulary (deny reasons, assurance levels) is declared once, in the
  // dependency-free module the verify service and @mandate/verifier share.
  const DECISION_MODULE = '@mandate/verifier/decide';
  // A contract may build on another service's contract (verify's mandate states are the mandates
  // contract's), never on its code.
  it.each(SERVICES)(
    "when %s's contract is read, then it imports only zod, the shared kernel, the decision module, other contracts and itself",
    (service) => {
      const dir = path.join(ROOT, 'services', service, 'src');
      const files = filesUnder(dir).filter((f) => /[\\/]contract(\.ts$|[\\/])/.test(f));
      expect(files.length).toBeGreaterThan(0);
      const outside = files.flatMap((file) =>
        importsOf(file)
          .filter(
            (spec) =>
              !(
                spec === 'zod' ||
                // The shared layers a contract may stand on: none that serves or stores.
                /^@mandate\/shared\/(core|mandate|events|contract)$/.test(spec) ||
                spec === DECISION_MODULE ||
                /^@mandate\/(mandates|verify|identity|audit)$/.test(spec) ||
                /^\.\/[\w-]+$/.test(spec)
              ),
          )
          .map((spec) => `${path.relative(ROOT, file)}: ${spec}`),
      );
      expect(outside).toEqual([]);
    },
  );
});

/** docs/SERVICE-CONVENTIONS.md, "The shared package's layers": bottom to top. */
const LAYERS = ['core', 'observability', 'mandate', 'events', 'data', 'contract', 'http', 'service'];
const SHARED_SRC = path.join(ROOT, 'packages/shared/src');
/** The layer a file of packages/shared/src sits in (undefined for the entries beside the layers). */
const layerOf = (file: string) => {
  const first = path.relative(SHARED_SRC, file).split(path.sep)[0]!;
  return LAYERS.includes(first) ? first : undefined;
};

/** Who imports each `layer:name` of the entries from outside the package: a service, a package or the root. */
function sharedImporters(): Map<string, Set<string>> {
  const NAMED = /(?:import|export)(?:\s+type)?\s*\{([^}]*)\}\s*from\s*'@mandate\/shared\/([a-z]+)'/g;
  const importers = new Map<string, Set<string>>();
  for (const file of everySourceFile().filter((f) => !f.startsWith(path.join(ROOT, 'packages/shared/')))) {
    // services/<x> and packages/<y> are one consumer each; the root's tests, benchmarks and scripts one more.
    const [top, folder] = path.relative(ROOT, file).split(path.sep);
    const consumer = top === 'services' || top === 'packages' ? `${top}/${folder}` : 'the root';
    for (const m of readFileSync(file, 'utf8').matchAll(NAMED)) {
      for (const item of m[1]!.split(',')) {
        const name = item
          .trim()
          .replace(/^type\s+/, '')
          .split(/\s+as\s+/)[0]!
          .trim();
        if (!name) continue;
        const key = `${m[2]}:${name}`;
        importers.set(key, (importers.get(key) ?? new Set()).add(consumer));
      }
    }
  }
  return importers;
}

/** The names a layer's entry lists, each with the module it comes from. */
function entryNames(layer: string): { name: string; module: string }[] {
  const index = path.join(SHARED_SRC, layer, 'index.ts');
  const entry = readFileSync(index, 'utf8');
  expect(entry).not.toMatch(/export \*/);
  const lists = [...entry.matchAll(/export\s*\{([^}]*)\}\s*from\s*'([^']+)'/g)];
  expect(lists).toHaveLength(entry.match(/export\s*\{/g)?.length ?? 0);
  return lists.flatMap((m) =>
    m[1]!
      .split(',')
      .map((item) => item.trim().replace(/^type\s+/, ''))
      .filter(Boolean)
      .map((name) => ({ name, module: `${path.resolve(path.dirname(index), m[2]!)}.ts` })),
  );
}

/** A module's code without its comments and quoted strings, where a name's mention is a use. */
const codeOf = (file: string) =>
  readFileSync(file, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/.*$/gm, '')
    .replace(/'(?:[^'\\\n]|\\.)*'/g, "''");

/**
 * The names one consumer alone imports that stay shared all the same, each with why: moved into
 * its consumer, it would take private state of its module (or a vendor) along.
 */
const STAYS_WITH_ONE_USER: Record<string, string> = {
  // The tracing adapter is the one place that knows OpenTelemetry (no service depends on it) and
  // holds whether a provider is installed.
  'observability: setRequestRoute': "the gateway's span naming, through the tracing adapter",
  'observability: setSpanAttributes': "the gateway's span attributes, through the tracing adapter",
  // Reads the recorder bench/probe.cjs installs, which request-timing.ts keeps private.
  'observability: requestTimingInstalled': "verify's benchmark marks, over the module's recorder",
  // Marks the response the metrics module times, which keeps its symbol private.
  'observability: timeToHeaders': "identity's credential feed, the one answer held open",
};

describe('the shared package in layers', () => {
  it('when a layer is read, then it imports only itself and the layers below it', () => {
    const upward = LAYERS.flatMap((layer, rank) =>
      filesUnder(path.join(SHARED_SRC, layer)).flatMap((file) =>
        importsOf(file)
          .filter((spec) => spec.startsWith('.') || spec.startsWith('@mandate/shared'))
          .map((spec) =>
            spec.startsWith('.')
              ? layerOf(path.resolve(path.dirname(file), spec))
              : spec.slice('@mandate/shared/'.length),
          )
          .filter((target) => target === undefined || LAYERS.indexOf(target) > rank)
          .map(
            (target) => `${path.relative(ROOT, file)} (${layer}) imports ${target ?? 'outside the layers'}`,
          ),
      ),
    );
    expect(upward).toEqual([]);
  });

  it('when the package.json is read, then each layer, the browser entry and testing are its only entries', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'packages/shared/package.json'), 'utf8')) as {
      exports: Record<string, string>;
    };
    expect(Object.keys(pkg.exports).sort()).toEqual(
      [...LAYERS, 'browser', 'testing'].map((entry) => `./${entry}`).sort(),
    );
    expect(readdirSync(SHARED_SRC).filter((name) => name.endsWith('.ts'))).toEqual(['browser.ts']);
  });

  it('when an entry is read, then each name it exports is imported by something outside the package', () => {
    const importers = sharedImporters();
    const unused = LAYERS.flatMap((layer) =>
      entryNames(layer)
        .filter(({ name }) => !importers.has(`${layer}:${name}`))
        .map(({ name }) => `${layer}: ${name}`),
    );
    expect(unused).toEqual([]);
  });

  // docs/DECISIONS.md, "Package boundaries": a name one service (or one other package) alone imports
  // is that consumer's, unless the package's own code uses it: another module of it, or its own
  // module beyond declaring it (a shared function's parameter type, a step of a shared function).
  it('when a name of an entry has one consumer, a service or another package, then the package itself uses it too', () => {
    const importers = sharedImporters();
    const sources = new Map(filesUnder(SHARED_SRC).map((file) => [file, codeOf(file)]));
    const oneUser = LAYERS.flatMap((layer) =>
      entryNames(layer)
        .filter(({ name }) => {
          const consumers = [...(importers.get(`${layer}:${name}`) ?? [])];
          return consumers.length === 1 && consumers[0] !== 'the root';
        })
        .filter(({ name, module }) => {
          const uses = (code: string) => code.match(new RegExp(`\\b${name}\\b`, 'g'))?.length ?? 0;
          const index = path.join(SHARED_SRC, layer, 'index.ts');
          const elsewhere = [...sources].some(
            ([file, code]) => file !== index && file !== module && uses(code) > 0,
          );
          return !elsewhere && uses(sources.get(module)!) <= 1;
        })
        .map(({ name }) => `${layer}: ${name}`),
    );
    const stays = Object.keys(STAYS_WITH_ONE_USER);
    expect(oneUser.filter((name) => !stays.includes(name))).toEqual([]);
    // An exception whose name has moved, or gained a second user, leaves the list.
    expect(stays.filter((name) => !oneUser.includes(name))).toEqual([]);
  });

  it('when the browser entry is followed, then it reaches no node module but node:crypto and no other entry', () => {
    const seen = new Set<string>();
    const reached: string[] = [];
    const follow = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const spec of importsOf(file)) {
        if (spec.startsWith('.')) follow(`${path.resolve(path.dirname(file), spec)}.ts`);
        else reached.push(spec);
      }
    };
    follow(path.join(SHARED_SRC, 'browser.ts'));
    expect(seen.size).toBeGreaterThan(3);
    expect([...new Set(reached)].filter((spec) => spec !== 'node:crypto')).toEqual([]);
  });

  it('when the dashboard and the offline checker are read, then they import only the browser entry of the package', () => {
    const files = ['packages/dashboard/src', 'packages/evidence-cli/src'].flatMap((dir) =>
      filesUnder(path.join(ROOT, dir)),
    );
    const offending = files.flatMap((file) =>
      importsOf(file)
        .filter(
          (spec) =>
            (spec.startsWith('@mandate/shared') && spec !== '@mandate/shared/browser') ||
            (spec.startsWith('.') &&
              !path.resolve(path.dirname(file), spec).startsWith(path.dirname(file).split('/src')[0]!)),
        )
        .map((spec) => `${path.relative(ROOT, file)}: ${spec}`),
    );
    expect(offending).toEqual([]);
  });
});
