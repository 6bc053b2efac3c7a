// Lints the OpenAPI document read from stdin with Redocly's recommended ruleset and prints the
// problems as JSON. A separate node process because @redocly/openapi-core is ESM only, which
// jest's CommonJS module system cannot load.
import { Buffer } from 'node:buffer';
import process from 'node:process';
import { createConfig, lintFromString } from '@redocly/openapi-core';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const config = await createConfig({
  extends: ['recommended'],
  rules: {
    // The public reads without input and limit (the wallet's JWKS, this document) have no 4xx of their own: an
    // unknown path (404) or method (405) is documented once in info.description, as OpenAPI has
    // no operation for it. contract.test.ts checks that every other operation lists its 4xx.
    'operation-4xx-response': 'off',
  },
});
const problems = await lintFromString({
  source: Buffer.concat(chunks).toString('utf8'),
  absoluteRef: 'openapi.json',
  config,
});
process.stdout.write(
  JSON.stringify(
    problems.map((p) => ({
      severity: p.severity,
      rule: p.ruleId,
      message: p.message,
      at: p.location?.[0]?.pointer,
    })),
  ),
);
