import { spawnSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');

// The methods and types are generated from the route contracts: a route added or changed there
// must reach the client (`npm run generate -w @mandate/client`), or integrators get a stale API.
// (A child process: the generator runs the TypeScript compiler and prettier, which jest's module system cannot host.)
it('when the client is generated from the contracts again, then src/generated.ts is what it makes', () => {
  const run = spawnSync(
    process.execPath,
    [path.join(ROOT, 'node_modules/tsx/dist/cli.mjs'), 'packages/client/scripts/generate.ts', '--check'],
    { cwd: ROOT, encoding: 'utf8', timeout: 150_000 },
  );
  expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
}, 160_000);
