import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { SignJWT, importJWK, jwtVerify, type JWK } from 'jose';
import { secretProblem } from '@mandate/shared/core';

/** `npm run secrets:production` (docs/KUBERNETES.md, "Deploying"): lines of secrets.env mandates and the gateway accept. */
const ROOT = path.join(__dirname, '..', '..');

describe('npm run secrets:production', () => {
  const output = execFileSync(process.execPath, ['--import', 'tsx', 'scripts/production-secrets.ts'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  const lines = Object.fromEntries(
    output
      .trim()
      .split('\n')
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );

  it('when run, then it prints the signing key and both tokens as secrets.env lines', () => {
    expect(Object.keys(lines).sort()).toEqual([
      'INTERNAL_TOKEN_SECRET',
      'LOCAL_SIGNING_KEY',
      'OPERATOR_TOKEN',
    ]);
    expect(secretProblem(lines.INTERNAL_TOKEN_SECRET!)).toBeUndefined();
    expect(secretProblem(lines.OPERATOR_TOKEN!)).toBeUndefined();
    expect(lines.INTERNAL_TOKEN_SECRET).not.toBe(lines.OPERATOR_TOKEN);
  });

  it('when its LOCAL_SIGNING_KEY signs an ES256 token, then its public half verifies it', async () => {
    const jwk = JSON.parse(lines.LOCAL_SIGNING_KEY!) as JWK;
    expect(jwk).toMatchObject({ kty: 'EC', crv: 'P-256', d: expect.any(String) });
    const token = await new SignJWT({ ok: true })
      .setProtectedHeader({ alg: 'ES256' })
      .sign(await importJWK(jwk, 'ES256'));
    const { d: _private, ...publicJwk } = jwk;
    await expect(jwtVerify(token, await importJWK(publicJwk, 'ES256'))).resolves.toMatchObject({
      payload: { ok: true },
    });
  });
});
