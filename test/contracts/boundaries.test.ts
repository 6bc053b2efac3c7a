import { readFileSync, readdirSync, statSync } from 'node:fs';
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
  const DECISION_MODULE = '@mandate/verifier/src/decide';
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
                spec === '@mandate/shared' ||
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
