import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { routes as verifyRoutes } from '@mandate/verify';

/**
 * Every route has exactly one handler (docs/DECISIONS.md, "How the services serve HTTP"): a
 * contract is implemented once in its service, and a route served by a node:http handler of its
 * own (verify's POST /v1/verify) is implemented by no express route beside it.
 */
const ROOT = path.resolve(__dirname, '../..');

function sourcesOf(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? sourcesOf(full) : /\.ts$/.test(full) ? [full] : [];
  });
}

const IMPLEMENTED = /\bimplement(?:Raw)?\(\s*([A-Za-z]+)\.([A-Za-z]+)\s*\)/g;
/** A node:http handler names its route by the contract's path: `routes.x.path`. */
const OWN_HANDLER = /\b([A-Za-z]+)\.([A-Za-z]+)\.path\b/g;

describe('one handler per route', () => {
  const services = readdirSync(path.join(ROOT, 'services'));

  it.each(services)('when %s is read, then no contract is implemented twice', (service) => {
    const counts = new Map<string, string[]>();
    for (const file of sourcesOf(path.join(ROOT, 'services', service, 'src'))) {
      for (const m of readFileSync(file, 'utf8').matchAll(IMPLEMENTED)) {
        const key = `${m[1]}.${m[2]}`;
        counts.set(key, [...(counts.get(key) ?? []), path.relative(ROOT, file)]);
      }
    }
    expect([...counts].filter(([, files]) => files.length > 1)).toEqual([]);
  });

  it('when verify is read, then every route has one handler: its own node:http one or an express one', () => {
    const files = sourcesOf(path.join(ROOT, 'services/verify/src'));
    const implemented = new Set<string>();
    const ownHandlers = new Set<string>();
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(IMPLEMENTED)) if (m[1] === 'routes') implemented.add(m[2]!);
      if (/\bRequestListener\b/.test(text))
        for (const m of text.matchAll(OWN_HANDLER)) if (m[1] === 'routes') ownHandlers.add(m[2]!);
    }
    expect(ownHandlers).toEqual(new Set(['verify']));
    expect([...ownHandlers].filter((name) => implemented.has(name))).toEqual([]);
    // Every verify contract is served by one of the two.
    const served = new Set([...implemented, ...ownHandlers]);
    expect(Object.keys(verifyRoutes).filter((name) => !served.has(name))).toEqual([]);
  });
});
