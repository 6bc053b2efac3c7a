import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startProduct, type Product } from '../fuzz/product';
import { installAlone, pack, runMain, typeCheck } from '../support/packed-package';

const PACKAGE = path.resolve(__dirname, '../../packages/client');

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
    const { filename, paths } = await pack(PACKAGE, dir);
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

    const app = await installAlone(dir, 'integrator', [filename]);
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

    // The program compiles; the one wrong line (a state that does not exist) is refused, and only it.
    const errors = await typeCheck(app, PROGRAM, WRONG);
    expect(errors).toEqual([expect.stringMatching(/^wrong\.ts\(3,.*"PAUSED"/)]);

    const answer = await runMain(app, [product.url, product.operatorToken]);
    expect(answer).toBe('ACTIVE ALLOW 1 404 NOT_FOUND id');
  }, 300_000);
});
