import { runToExit } from '../support/script-process';
import { randomBytes } from 'node:crypto';
import { reportStartFailure, startService, type BaseConfig, type ServiceMain } from '@mandate/shared/service';
import { service as audit } from '@mandate/audit/service';
import { service as gateway } from '@mandate/gateway/service';
import { service as identity } from '@mandate/identity/service';
import { service as mandates } from '@mandate/mandates/service';
import { service as verify } from '@mandate/verify/service';
import { freePort } from '../support/stack';

const SECRET = randomBytes(32).toString('hex');
/** What every service needs as its own process; each case adds or removes from it. */
const BASE = { INTERNAL_TOKEN_SECRET: SECRET, PORT: '0', LOG_LEVEL: 'silent' };
const GATEWAY_BASE = {
  ...BASE,
  OPERATOR_TOKEN: randomBytes(32).toString('hex'),
  MANDATES_URL: 'http://127.0.0.1:1',
  VERIFY_URL: 'http://127.0.0.1:1',
  IDENTITY_URL: 'http://127.0.0.1:1',
  AUDIT_URL: 'http://127.0.0.1:1',
};
const SECRET_RULE =
  'is required when a service runs as its own process (the same value in every service; e.g. openssl rand -hex 32)';
const SIGNING_KEY_RULE =
  'is required when mandates runs as its own process (every replica must sign with the same key): set LOCAL_SIGNING_KEY (a private EC P-256 JWK) or LOCAL_SIGNING_KEY_FILE, or KMS_KEY_ID / SIGNING_KEY_IDS with AWS_REGION';
const NOT_BOTH = 'DASHBOARD_OIDC_ISSUER and DASHBOARD_OIDC_CLIENT_ID are set together, or neither';
const PRODUCTION_PEM = 'is required when NODE_ENV=production and WALLET_PUBLIC_URL is set (docs/WALLET.md)';

const SERVICES: Record<string, ServiceMain<BaseConfig, unknown, unknown>> = {
  gateway: gateway as unknown as ServiceMain<BaseConfig, unknown, unknown>,
  mandates: mandates as unknown as ServiceMain<BaseConfig, unknown, unknown>,
  verify: verify as unknown as ServiceMain<BaseConfig, unknown, unknown>,
  identity: identity as unknown as ServiceMain<BaseConfig, unknown, unknown>,
  audit: audit as unknown as ServiceMain<BaseConfig, unknown, unknown>,
};

/** What a service's main.ts prints when its start fails (the same steps, in this process): its lines. */
async function startFailureLines(name: string, env: Record<string, string>): Promise<string[]> {
  let started;
  try {
    started = await startService(SERVICES[name]!, env, { separateProcess: true });
  } catch (err) {
    const lines: string[] = [];
    reportStartFailure(err, (l) => lines.push(l));
    return lines;
  }
  await started.stop();
  return ['(started)'];
}

describe('a bad configuration: one `config error: NAME: …` line per problem, nothing else', () => {
  // Every required variable missing and every conditional rule broken, per service, with the exact lines.
  it.each<[string, string, Record<string, string>, string[]]>([
    ...['gateway', 'mandates', 'verify', 'identity', 'audit'].map(
      (name) =>
        [
          name,
          'no INTERNAL_TOKEN_SECRET',
          { PORT: '0', LOG_LEVEL: 'silent' },
          [
            // Mandates misses its signing key too: every problem is its own line.
            ...(name === 'mandates' ? [`config error: LOCAL_SIGNING_KEY: ${SIGNING_KEY_RULE}`] : []),
            `config error: INTERNAL_TOKEN_SECRET: ${SECRET_RULE}`,
          ],
        ] as [string, string, Record<string, string>, string[]],
    ),
    ['mandates', 'no signing key', BASE, [`config error: LOCAL_SIGNING_KEY: ${SIGNING_KEY_RULE}`]],
    [
      'gateway',
      'no OPERATOR_TOKEN and no upstream URL',
      BASE,
      [
        "config error: OPERATOR_TOKEN: is required (the platform operator's bearer secret; e.g. openssl rand -hex 32)",
        'config error: MANDATES_URL: is required: the mandates service, comma-separated replicas',
        'config error: VERIFY_URL: is required: the verify service, comma-separated replicas',
        'config error: IDENTITY_URL: is required: the identity service, comma-separated replicas',
        'config error: AUDIT_URL: is required: the audit service, comma-separated replicas',
      ],
    ],
    [
      'gateway',
      'a short OPERATOR_TOKEN',
      { ...GATEWAY_BASE, OPERATOR_TOKEN: 'short' },
      ['config error: OPERATOR_TOKEN: must be at least 32 characters (e.g. openssl rand -hex 32)'],
    ],
    [
      'gateway',
      'DASHBOARD_OIDC_ISSUER without DASHBOARD_OIDC_CLIENT_ID',
      { ...GATEWAY_BASE, DASHBOARD_OIDC_ISSUER: 'https://login.example.com' },
      [`config error: DASHBOARD_OIDC_CLIENT_ID: ${NOT_BOTH}`],
    ],
    [
      'gateway',
      'DASHBOARD_OIDC_CLIENT_ID without DASHBOARD_OIDC_ISSUER',
      { ...GATEWAY_BASE, DASHBOARD_OIDC_CLIENT_ID: 'dashboard' },
      [`config error: DASHBOARD_OIDC_ISSUER: ${NOT_BOTH}`],
    ],
    [
      'gateway',
      'JWT_ISSUERS that is not JSON',
      { ...GATEWAY_BASE, JWT_ISSUERS: '{' },
      [
        'config error: JWT_ISSUERS: must be a JSON list of {name, issuer, jwks_uri, audience, subject_scheme}',
      ],
    ],
    [
      'verify',
      'no MANDATES_URL',
      BASE,
      ['config error: MANDATES_URL: is required: the mandates service, comma-separated replicas'],
    ],
    [
      'mandates',
      'KMS_KEY_ID without AWS_REGION',
      { ...BASE, KMS_KEY_ID: 'alias/mandates' },
      ["config error: AWS_REGION: is required when KMS_KEY_ID or SIGNING_KEY_IDS is set (the keys' region)"],
    ],
    [
      'mandates',
      'KMS_KEY_ID other than the first of SIGNING_KEY_IDS',
      { ...BASE, AWS_REGION: 'eu-west-1', KMS_KEY_ID: 'alias/a', SIGNING_KEY_IDS: 'alias/b,alias/a' },
      ['config error: KMS_KEY_ID: must be the first of SIGNING_KEY_IDS (the first key signs), or unset'],
    ],
    [
      'mandates',
      'LOCAL_SIGNING_KEY that is not a JWK',
      { ...BASE, LOCAL_SIGNING_KEY: 'not json' },
      ['config error: LOCAL_SIGNING_KEY: must be a JSON private JWK (EC P-256), or unset'],
    ],
    [
      'identity',
      'WALLET_PUBLIC_URL without WALLET_SUBJECT_SECRET',
      { ...BASE, WALLET_PUBLIC_URL: 'http://127.0.0.1:8080' },
      [
        'config error: WALLET_SUBJECT_SECRET: is required when WALLET_PUBLIC_URL is set (keep it stable; e.g. openssl rand -hex 32)',
      ],
    ],
    [
      'identity',
      'WALLET_PUBLIC_URL with a short WALLET_SUBJECT_SECRET',
      { ...BASE, WALLET_PUBLIC_URL: 'http://127.0.0.1:8080', WALLET_SUBJECT_SECRET: 'short' },
      [
        'config error: WALLET_SUBJECT_SECRET: must be at least 32 characters when WALLET_PUBLIC_URL is set (keep it stable; e.g. openssl rand -hex 32)',
      ],
    ],
    [
      'identity',
      'NODE_ENV=production with WALLET_PUBLIC_URL and no verifier key, certificate or sign-in key',
      {
        ...BASE,
        NODE_ENV: 'production',
        WALLET_PUBLIC_URL: 'https://api.example.com',
        WALLET_SUBJECT_SECRET: SECRET,
      },
      [
        `config error: WALLET_VERIFIER_KEY_PEM: ${PRODUCTION_PEM}`,
        `config error: WALLET_VERIFIER_CERT_PEM: ${PRODUCTION_PEM}`,
        `config error: WALLET_SIGN_IN_KEY_PEM: ${PRODUCTION_PEM}`,
      ],
    ],
    [
      'identity',
      'NODE_ENV=production with WALLET_PUBLIC_URL, the verifier key and certificate, and no sign-in key',
      {
        ...BASE,
        NODE_ENV: 'production',
        WALLET_PUBLIC_URL: 'https://api.example.com',
        WALLET_SUBJECT_SECRET: SECRET,
        // Never parsed: the missing sign-in key is reported before any key is read.
        WALLET_VERIFIER_KEY_PEM: 'key',
        WALLET_VERIFIER_CERT_PEM: 'certificate',
      },
      [`config error: WALLET_SIGN_IN_KEY_PEM: ${PRODUCTION_PEM}`],
    ],
    [
      'identity',
      'NODE_ENV=production with WALLET_PUBLIC_URL and nothing else of the wallet',
      { ...BASE, NODE_ENV: 'production', WALLET_PUBLIC_URL: 'https://api.example.com' },
      [
        'config error: WALLET_SUBJECT_SECRET: is required when WALLET_PUBLIC_URL is set (keep it stable; e.g. openssl rand -hex 32)',
        `config error: WALLET_VERIFIER_KEY_PEM: ${PRODUCTION_PEM}`,
        `config error: WALLET_VERIFIER_CERT_PEM: ${PRODUCTION_PEM}`,
        `config error: WALLET_SIGN_IN_KEY_PEM: ${PRODUCTION_PEM}`,
      ],
    ],
    [
      'identity',
      'WALLET_TRUSTED_ISSUERS that is not JSON',
      {
        ...BASE,
        WALLET_PUBLIC_URL: 'http://127.0.0.1:8080',
        WALLET_SUBJECT_SECRET: SECRET,
        WALLET_TRUSTED_ISSUERS: '[',
      },
      ['config error: WALLET_TRUSTED_ISSUERS: is not valid JSON (a JSON array, docs/WALLET.md)'],
    ],
    [
      'audit',
      'AUDIT_PREFETCH out of range',
      { ...BASE, AUDIT_PREFETCH: '0' },
      ['config error: AUDIT_PREFETCH: must be between 1 and 65535'],
    ],
    [
      'audit',
      'a bound zod states itself',
      { ...BASE, MANDATES_TIMEOUT_MS: '0' },
      ['config error: MANDATES_TIMEOUT_MS: must be at least 1'],
    ],
  ])(
    'when %s starts with %s, then it prints exactly its config error lines',
    async (name, _, env, expected) => {
      expect(await startFailureLines(name, env)).toEqual(expected);
    },
  );

  // The same lines out of the real processes: exit 1, no stack trace, nothing else.
  it('when each service, and npm start, is started as its own process with a bad variable, then it prints only that line and exits 1', async () => {
    const port = String(await freePort());
    const runs = await Promise.all([
      runToExit('services/gateway/src/main.ts', { ...GATEWAY_BASE, JWT_ISSUERS: '{' }),
      runToExit('services/mandates/src/main.ts', { ...BASE, LOCAL_SIGNING_KEY: 'not json' }),
      runToExit('services/verify/src/main.ts', BASE),
      // The issue's case: found in wiring, after the store and the bus are up.
      runToExit('services/identity/src/main.ts', { ...BASE, WALLET_PUBLIC_URL: 'http://127.0.0.1:8080' }),
      runToExit('services/audit/src/main.ts', { ...BASE, AUDIT_PREFETCH: '0' }),
      runToExit('scripts/embedded.ts', { PORT: port, WALLET_SUBJECT_SECRET: 'short', LOG_LEVEL: 'silent' }),
    ]);
    expect(runs).toEqual([
      {
        code: 1,
        lines: [
          'config error: JWT_ISSUERS: must be a JSON list of {name, issuer, jwks_uri, audience, subject_scheme}',
        ],
      },
      {
        code: 1,
        lines: ['config error: LOCAL_SIGNING_KEY: must be a JSON private JWK (EC P-256), or unset'],
      },
      {
        code: 1,
        lines: ['config error: MANDATES_URL: is required: the mandates service, comma-separated replicas'],
      },
      {
        code: 1,
        lines: [
          'config error: WALLET_SUBJECT_SECRET: is required when WALLET_PUBLIC_URL is set (keep it stable; e.g. openssl rand -hex 32)',
        ],
      },
      { code: 1, lines: ['config error: AUDIT_PREFETCH: must be between 1 and 65535'] },
      {
        code: 1,
        lines: [
          'config error: WALLET_SUBJECT_SECRET: must be at least 32 characters when WALLET_PUBLIC_URL is set (keep it stable; e.g. openssl rand -hex 32)',
        ],
      },
    ]);
  }, 90_000);
});
