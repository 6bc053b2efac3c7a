import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startProduct, type Product } from '../fuzz/product';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');
const PACKAGE = path.join(ROOT, 'packages/client');
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');
// npm itself, run by this node: the test does not depend on which npm PATH finds.
const NPM = path.join(path.dirname(process.execPath), '../lib/node_modules/npm/bin/npm-cli.js');

/** An integrator's program, in a directory with nothing of this repository: only the installed tarball. */
const PROGRAM = `
import { MandateApiError, MandateClient, type Mandate } from '@mandate/client';

export async function main(baseUrl: string, operatorToken: string): Promise<string> {
  const operator = new MandateClient({ baseUrl, token: operatorToken });
  const { tenant, api_key } = await operator.platform.createTenant({ name: 'Packed client' });
  const client = new MandateClient({ baseUrl, apiKey: tenant.id + ':' + api_key.api_key });
  const mandate: Mandate = await client.mandates.create({
    principal: 'customer-42',
    delegate: { id: 'agent-7', type: 'agent' },
    scope: { actions: ['payments:create'], constraints: { max_amount: 5000, currency: 'EUR' } },
  });
  const decision = await client.verify({ mandate_id: mandate.id, action: 'payments:create', amount: 1200, currency: 'EUR' });
  let listed = 0;
  for await (const m of client.mandates.list({ state: 'ACTIVE' })) if (m.id === mandate.id) listed++;
  try {
    await client.mandates.get('mdt_00000000000000000000000000');
    return 'no error';
  } catch (err) {
    if (!(err instanceof MandateApiError)) throw err;
    return [mandate.state, decision.decision, listed, err.status, err.error, err.requestId ? 'id' : 'no id'].join(' ');
  }
}
`;
const WRONG = `
import type { Mandate } from '@mandate/client';
export const paused: Mandate['state'] = 'PAUSED';
`;

describe('the packed @mandate/client', () => {
  let dir: string;
  let product: Product;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'mandate-client-pack-'));
    product = await startProduct();
  }, 60_000);
  afterAll(async () => {
    await product?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('when it is packed, installed alone and used by a TypeScript program, then it type-checks and runs against the product', async () => {
    // npm pack runs prepack: the build into dist/.
    const packed = await run(process.execPath, [NPM, 'pack', '--json', '--pack-destination', dir], {
      cwd: PACKAGE,
      timeout: 240_000,
    });
    const [{ filename, files }] = JSON.parse(packed.stdout) as [
      { filename: string; files: { path: string }[] },
    ];
    const paths = files.map((f) => f.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'package.json',
        'README.md',
        'dist/index.js',
        'dist/index.d.ts',
        'dist/generated.d.ts',
      ]),
    );
    expect(paths.filter((p) => !p.startsWith('dist/') && p !== 'package.json' && p !== 'README.md')).toEqual(
      [],
    );

    const app = path.join(dir, 'app');
    mkdirSync(app);
    writeFileSync(
      path.join(app, 'package.json'),
      JSON.stringify({ name: 'integrator', private: true, type: 'module' }),
    );
    await run(
      process.execPath,
      [NPM, 'install', '--offline', '--no-audit', '--no-fund', path.join(dir, filename)],
      {
        cwd: app,
        timeout: 120_000,
      },
    );
    // Nothing of the workspace and nothing of Node's own at runtime: the browser gets the same file.
    const installed = path.join(app, 'node_modules/@mandate/client/dist');
    for (const name of readdirSync(installed).filter((n) => n.endsWith('.js') || n.endsWith('.d.ts'))) {
      const text = readFileSync(path.join(installed, name), 'utf8');
      expect({
        name,
        imports: text.match(/(from\s*|import\(|require\()["'](@mandate\/|node:|zod)[^"']*/g),
      }).toEqual({
        name,
        imports: null,
      });
    }

    writeFileSync(path.join(app, 'program.ts'), PROGRAM);
    writeFileSync(path.join(app, 'wrong.ts'), WRONG);
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
    // The program compiles; the one wrong line (a state that does not exist) is refused, and only it.
    const tsc = await run(process.execPath, [TSC, '-p', '.'], { cwd: app, timeout: 120_000 }).then(
      (r) => r.stdout,
      (err: { stdout: string }) => err.stdout,
    );
    expect(tsc.split('\n').filter((line) => /error TS/.test(line))).toEqual([
      expect.stringMatching(/^wrong\.ts\(3,.*"PAUSED"/),
    ]);

    const answer = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "const { main } = await import('./out/program.js'); console.log(await main(process.argv[1], process.argv[2]));",
        product.url,
        product.operatorToken,
      ],
      { cwd: app, timeout: 60_000 },
    );
    expect(answer.stdout.trim()).toBe('ACTIVE ALLOW 1 404 NOT_FOUND id');
  }, 300_000);
});
