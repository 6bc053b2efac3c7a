/**
 * `npm run secrets:production`: the signing material and shared secrets a production deployment
 * needs, as lines of deploy/k8s/secrets.env (docs/KUBERNETES.md, "Deploying"): a new EC P-256
 * private JWK for mandates (LOCAL_SIGNING_KEY, the same for every replica; its public half is
 * published at /v1/.well-known/jwks.json), and 32 random bytes each for INTERNAL_TOKEN_SECRET and
 * OPERATOR_TOKEN. Printed to stdout only, never written anywhere: redirect it into the file, and
 * keep the key — mandates signed with it verify only as long as its JWKS is published.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';

export function productionSecrets(): Record<
  'LOCAL_SIGNING_KEY' | 'INTERNAL_TOKEN_SECRET' | 'OPERATOR_TOKEN',
  string
> {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    LOCAL_SIGNING_KEY: JSON.stringify(privateKey.export({ format: 'jwk' })),
    INTERNAL_TOKEN_SECRET: randomBytes(32).toString('hex'),
    OPERATOR_TOKEN: randomBytes(32).toString('hex'),
  };
}

if (require.main === module) {
  const only = process.argv[2];
  const secrets = productionSecrets();
  if (only && !(only in secrets)) {
    process.stderr.write(`usage: npm run secrets:production [-- ${Object.keys(secrets).join('|')}]\n`);
    process.exit(2);
  }
  for (const [name, value] of Object.entries(secrets))
    if (!only || only === name) process.stdout.write(`${name}=${value}\n`);
}
