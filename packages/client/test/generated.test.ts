import { readFileSync } from 'node:fs';
import path from 'node:path';
import { plan } from '../scripts/generate';
import { OPERATIONS } from '../src/generated';

// The methods and types are generated from the route contracts: a route added or changed there
// must reach the client (`npm run generate -w @mandate/client`), or integrators get a stale API.
// The types themselves are held to the contracts by the type check (test/contract-types.check.ts).
describe('the generated client', () => {
  const { table, named } = plan();

  it('when the contracts are read again, then the operations table is the generated one', () => {
    expect(OPERATIONS).toEqual(table);
  });

  it('when the contracts are read again, then each of their named types is generated and type-checked', () => {
    const read = (file: string) => readFileSync(path.join(__dirname, file), 'utf8');
    const declared = new Set(
      [...read('../src/generated.ts').matchAll(/^export type (\w+) =/gm)].map((m) => m[1]),
    );
    expect([...named.keys()].filter((name) => !declared.has(name))).toEqual([]);
    const checked = [...read('contract-types.check.ts').matchAll(/Equal<(?:Flat<)?Client\.(\w+)>?,/g)].map(
      (m) => m[1],
    );
    expect(checked).toEqual([...named.keys()]);
  });
});
