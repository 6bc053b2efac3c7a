import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { SYNC_TIMEOUT_MS } from '@mandate/shared/testing';
import { MandateClient } from '../../packages/client/src';
import { startProduct, type Product } from '../fuzz/product';
import { eventually } from '../support/eventually';
import { installAlone, pack, runMain, typeCheck } from '../support/packed-package';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');
const PACKAGE = path.join(ROOT, 'packages/verifier');

/**
 * A relying party's program, in a directory with nothing of this repository: the installed tarball
 * and jose. It fetches the JWKS and the mandate's list from the service (the list's signed uri names
 * the service's public address, 127.0.0.1:8080 by default; this product listens elsewhere, so its
 * fetch sends the same path there).
 */
const PROGRAM = `
import { DENY_REASONS, OfflineVerificationError, OfflineVerifier, verifyOffline, type OfflineDecision } from '@mandate/verifier';
import { DENY_REASONS as DECISION_REASONS, firstFailure } from '@mandate/verifier/decide';

export async function main(baseUrl: string, jws: string, tenant_id: string): Promise<string> {
  const here = (url: string, init?: { headers?: Record<string, string> }) => fetch(baseUrl + new URL(url).pathname, init);
  const jwksUri = baseUrl + '/v1/.well-known/jwks.json';
  const verifier = new OfflineVerifier({ jwksUri, fetch: here });
  const request = { action: 'payments:create', amount: 1200, currency: 'EUR', delegate_id: 'agent-7' };
  const decided: OfflineDecision = await verifier.verify({ jws, request, tenant_id });
  const over = await verifier.verify({ jws, request: { ...request, amount: 9000 }, tenant_id });
  const oneShot = await verifyOffline({ jws, request, tenant_id, jwks: await (await fetch(jwksUri)).json(), fetch: here });
  const [header, payload, signature] = jws.split('.') as [string, string, string];
  const forged = [header, payload, signature.slice(0, 10) + (signature[10] === 'A' ? 'B' : 'A') + signature.slice(11)].join('.');
  const refused = await verifier.verify({ jws: forged, request, tenant_id }).then(
    (d) => d.decision,
    (err: unknown) => (err instanceof OfflineVerificationError ? err.code : String(err)),
  );
  const local = firstFailure({ delegate: { id: 'agent-7' }, scope: { actions: ['payments:*'] } }, 'ACTIVE', { action: 'refunds:create' }, new Date());
  return [decided.decision, decided.reason, over.reason, oneShot.decision, oneShot.reason, refused, local, DECISION_REASONS === DENY_REASONS].join(' ');
}
`;
const WRONG = `
import type { OfflineDecision } from '@mandate/verifier';
export const maybe: OfflineDecision['decision'] = 'MAYBE';
`;

describe('the packed @mandate/verifier', () => {
  let dir: string;
  let product: Product;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'mandate-verifier-pack-'));
    product = await startProduct();
  }, 60_000);
  afterAll(async () => {
    await product?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('when it is packed and installed alone, then plain Node runs a program that decides offline against the served JWKS and list, as the service does after a revoke', async () => {
    const { filename, paths: packedPaths } = await pack(PACKAGE, dir);
    const paths = [...packedPaths].sort();
    // The build and the manifest: no sources, no tests, no build script, nothing of the services.
    expect(paths).toEqual([
      'README.md',
      'dist/decide.d.ts',
      'dist/decide.js',
      'dist/decide.js.map',
      'dist/index.d.ts',
      'dist/index.js',
      'dist/index.js.map',
      'dist/package.json',
      // The reasons in words' and the request rules' types, which decide.d.ts re-exports (their code
      // is bundled into decide.js).
      'dist/reasons.d.ts',
      'dist/request.d.ts',
      'package.json',
    ]);
    // jose from this repository's install, packed as the registry would serve it: the install is offline.
    const { filename: joseFile } = await pack(dir, dir, [
      '--ignore-scripts',
      path.join(ROOT, 'node_modules/jose'),
    ]);

    const app = await installAlone(dir, 'relying-party', [joseFile, filename]);
    const installed = path.join(app, 'node_modules/@mandate/verifier');
    const manifest = JSON.parse(readFileSync(path.join(installed, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(Object.keys(manifest.dependencies)).toEqual(['jose']);
    expect(readdirSync(path.join(app, 'node_modules')).sort()).toEqual([
      '.package-lock.json',
      '@mandate',
      'jose',
    ]);
    // What the built files import: jose, Node's built-ins and each other, nothing of the workspace.
    for (const name of readdirSync(path.join(installed, 'dist')).filter((n) => /\.(js|d\.ts)$/.test(n))) {
      const text = readFileSync(path.join(installed, 'dist', name), 'utf8');
      const imports = [...text.matchAll(/(?:from\s*|import\(\s*|require\(\s*)["']([^"']+)["']/g)].map(
        (m) => m[1],
      );
      expect({
        name,
        imports: imports.filter(
          (spec) => !/^(jose|node:zlib|\.\/(decide|index|reasons|request)\.js)$/.test(spec!),
        ),
      }).toEqual({ name, imports: [] });
    }

    // The program compiles (both entry points' declarations resolve); the one wrong line is refused, and only it.
    const errors = await typeCheck(app, PROGRAM, WRONG);
    expect(errors).toEqual([expect.stringMatching(/^wrong\.ts\(3,.*"MAYBE"/)]);
    expect(existsSync(path.join(app, 'out/program.js'))).toBe(true);

    const client = new MandateClient({ baseUrl: product.url, token: product.operatorToken });
    const { tenant, api_key } = await client.platform.createTenant({ name: 'Packed verifier' });
    const tenantClient = new MandateClient({
      baseUrl: product.url,
      apiKey: `${tenant.id}:${api_key.api_key}`,
    });
    const mandate = await tenantClient.mandates.create({
      principal: 'customer-42',
      delegate: { id: 'agent-7', type: 'agent' },
      scope: { actions: ['payments:create'], constraints: { max_amount: 5000, currency: 'EUR' } },
    });
    const jws = mandate.signature!.jws;
    // Plain Node: no tsx, no loader, nothing of this repository on the module path.
    const decide = () => runMain(app, [product.url, jws, tenant.id], { PATH: process.env.PATH });

    expect(await decide()).toBe(
      'ALLOW OK AMOUNT_EXCEEDS_LIMIT ALLOW OK MANDATE_SIGNATURE_INVALID ACTION_NOT_PERMITTED true',
    );
    const online = await tenantClient.verify({
      mandate_id: mandate.id,
      action: 'payments:create',
      amount: 1200,
      currency: 'EUR',
      delegate_id: 'agent-7',
    });
    expect(online).toMatchObject({ decision: 'ALLOW' });

    // The revoke reaches the list through the outbox: a list fetched within its ttl (60 s) shows it.
    await tenantClient.mandates.revoke(mandate.id, { reason: 'packed verifier test' });
    const revoked =
      'DENY MANDATE_REVOKED MANDATE_REVOKED DENY MANDATE_REVOKED MANDATE_SIGNATURE_INVALID ACTION_NOT_PERMITTED true';
    let last = '';
    await eventually(
      async () => ((last = await decide()) === revoked ? true : undefined),
      70_000,
      'the packed verifier to read the revoke from the served list',
      250,
    );
    expect(last).toBe(revoked);

    // Only the exported entry points: a path into the package is refused by Node itself. (Spelled in
    // pieces: test/contracts/boundaries.test.ts refuses the path in this repository's own imports.)
    const deepPath = ['@mandate/verifier', 'src', 'decide.ts'].join('/');
    const deep = await run(
      process.execPath,
      ['--input-type=module', '-e', `await import(${JSON.stringify(deepPath)})`],
      { cwd: app, timeout: SYNC_TIMEOUT_MS },
    ).then(
      () => 'imported',
      (err: { stderr: string }) => /ERR_PACKAGE_PATH_NOT_EXPORTED/.exec(err.stderr)?.[0] ?? err.stderr,
    );
    expect(deep).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED');
  }, 300_000);
});
