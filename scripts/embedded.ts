/**
 * `npm start`: all five services in one process, each on its own port, sharing an in-process
 * event bus. Every adapter still follows its variable (AMQP_URL, MONGO_URL, REDIS_URL), so the
 * same launcher runs against real infrastructure when those are set.
 */
import { randomBytes } from 'node:crypto';
import { ConfigError, parseConfig } from '@mandate/shared/core';
import { createLogger, readableLogStream, setLogDestination } from '@mandate/shared/observability';
import { InProcessBus } from '@mandate/shared/events';
import { assertCanListen, type RunningServer } from '@mandate/shared/http';
import {
  reportStartFailure,
  serviceConfig,
  startService,
  type BaseConfig,
  type ServiceMain,
  type StartOptions,
  type StartedService,
} from '@mandate/shared/service';
import { service as audit } from '@mandate/audit/service';
import { service as gateway } from '@mandate/gateway/service';
import { service as identity } from '@mandate/identity/service';
import { TEST_PID_ISSUER_URL } from '@mandate/test-wallet';
import { service as mandates } from '@mandate/mandates/service';
import { service as verify } from '@mandate/verify/service';
import { localWalletEnv, walletJwtIssuer } from './local-wallet';

export interface EmbeddedStack {
  url: string;
  operatorToken: string;
  stop(): Promise<void>;
}

/** The five services started in this process by startInProcess, gateway last. */
export interface InProcessServices {
  identity: StartedService<unknown, { store: object }>;
  mandates: StartedService<unknown, { store: object }>;
  verify: StartedService<unknown>;
  audit: StartedService<unknown, { store: object }>;
  gateway: StartedService<unknown>;
  servers: Record<string, RunningServer>;
  /** Gateway first (stops new work), then the services, then the bus drains. */
  stop(): Promise<void>;
}

export interface InProcessOptions {
  bus: InProcessBus;
  logLevel: string;
  /** Environment of the four internal services (they take any free port). */
  internal: NodeJS.ProcessEnv;
  /** Environment of the gateway; the upstream URLs are added. */
  gateway: NodeJS.ProcessEnv;
  /** Added to the mandates service's environment. */
  mandates?: NodeJS.ProcessEnv;
  /** Key revocations and role changes evict the gateway's cached credentials at once. */
  credentialEvents?: boolean;
  /** The dashboard's development sign-in (pick a subject of a tenant): `npm start` only. */
  devSignIn?: boolean;
}

/**
 * The five services in one process, each through the same steps as its own main.ts
 * (startService), sharing `bus` as the embedded override, wired to each other by URL: the one
 * composition of `npm start` and of the in-process product the fuzz tests drive.
 */
export async function startInProcess(options: InProcessOptions): Promise<InProcessServices> {
  const { bus, logLevel, internal } = options;
  checkInProcessConfig(options);
  const stops: (() => Promise<void>)[] = [];
  const servers: Record<string, RunningServer> = {};
  const run = async <C extends BaseConfig, D, O>(
    main: ServiceMain<C, D, O>,
    serviceEnv: NodeJS.ProcessEnv,
    overrides: StartOptions<O>['overrides'],
  ): Promise<StartedService<C, D>> => {
    // One process, one tracer provider: its spans are named after the product, not after whichever service started first.
    const env = { OTEL_SERVICE_NAME: 'mandate-service', ...serviceEnv };
    const started = await startService(main, env, { overrides, logLevel });
    servers[main.name] = started.server;
    stops.push(started.stop);
    return started;
  };
  const stop = async () => {
    for (const s of stops.reverse()) await s();
    await bus.close();
  };
  try {
    const identityService = await run(identity, internal, { publisher: bus });
    const mandatesService = await run(
      mandates,
      // Mandates binds identity verifications (principal.verification_id) through identity.
      { ...internal, IDENTITY_URL: identityService.server.url, ...options.mandates },
      { publisher: bus },
    );
    const mandatesUrl = mandatesService.server.url;
    const verifyService = await run(verify, { ...internal, MANDATES_URL: mandatesUrl }, { publisher: bus });
    const auditService = await run(
      audit,
      // Local development: webhooks to http://127.0.0.1 or localhost are allowed unless the variable says otherwise.
      { WEBHOOKS_ALLOW_LOOPBACK: 'true', ...internal, MANDATES_URL: mandatesUrl },
      { source: bus, publisher: bus },
    );
    const gatewayService = await run(
      gateway,
      {
        ...options.gateway,
        MANDATES_URL: mandatesUrl,
        VERIFY_URL: verifyService.server.url,
        IDENTITY_URL: identityService.server.url,
        AUDIT_URL: auditService.server.url,
      },
      gatewayOverrides(options),
    );
    return {
      identity: identityService,
      mandates: mandatesService,
      verify: verifyService,
      audit: auditService,
      gateway: gatewayService,
      servers,
      stop,
    };
  } catch (err) {
    for (const s of stops.reverse()) await s().catch(() => undefined);
    throw err;
  }
}

/** The gateway's in-process parts: the shared bus, and what only `npm start` turns on. */
function gatewayOverrides(options: InProcessOptions) {
  const { bus } = options;
  return {
    publisher: bus,
    ...(options.credentialEvents ? { credentialEvents: bus } : {}),
    ...(options.devSignIn ? { devSignIn: true } : {}),
  };
}

/** Where a service's URL of another goes before that one listens: only the configuration check sees it. */
const NOT_YET = 'http://127.0.0.1:1';

/**
 * Every service's configuration, each from the environment startInProcess gives it (the URLs of
 * the others as placeholders), before the first one starts: a bad variable is reported, every
 * problem once, before four services start for nothing (docs/CONFIGURATION.md, "The launchers").
 */
function checkInProcessConfig(options: InProcessOptions): void {
  const { internal } = options;
  const upstreams = { MANDATES_URL: NOT_YET, VERIFY_URL: NOT_YET, IDENTITY_URL: NOT_YET, AUDIT_URL: NOT_YET };
  const planned: [Pick<ServiceMain<BaseConfig, unknown>, 'configSchema'>, NodeJS.ProcessEnv][] = [
    [identity, internal],
    [mandates, { ...internal, IDENTITY_URL: NOT_YET, ...options.mandates }],
    [verify, { ...internal, MANDATES_URL: NOT_YET }],
    [audit, { WEBHOOKS_ALLOW_LOOPBACK: 'true', ...internal, MANDATES_URL: NOT_YET }],
    [gateway, { ...options.gateway, ...upstreams }],
  ] as never;
  const problems = new Set<string>();
  for (const [main, env] of planned) {
    try {
      serviceConfig(main, env, false);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      for (const problem of err.problems) problems.add(problem);
    }
  }
  if (problems.size > 0) throw new ConfigError([...problems]);
}

export async function startEmbedded(
  env: NodeJS.ProcessEnv = process.env,
  quiet = false,
): Promise<EmbeddedStack> {
  const level = quiet ? 'silent' : (env.LOG_LEVEL ?? 'info');
  const generatedOperatorToken = env.OPERATOR_TOKEN ? undefined : randomBytes(24).toString('base64url');
  const shared = {
    ...env,
    INTERNAL_TOKEN_SECRET: env.INTERNAL_TOKEN_SECRET ?? randomBytes(32).toString('hex'),
    OPERATOR_TOKEN: env.OPERATOR_TOKEN ?? generatedOperatorToken,
  };
  // A bad gateway setting (PORT, …) is reported before four services start for nothing.
  const gatewayConfig = parseConfig(gateway.configSchema, shared);
  // A taken or forbidden PORT: one line (`listen error: …`) before four services start for nothing.
  await assertCanListen(gatewayConfig.PORT, gatewayConfig.HOST);
  // The wallet reaches the gateway on loopback, so a fixed PORT is needed: the request object names the URL before the gateway listens.
  const wallet = localWalletEnv(env, gatewayConfig.PORT);
  const services = await startInProcess({
    bus: new InProcessBus(createLogger('bus', level)),
    logLevel: level,
    // Internal services take any free port; only the gateway listens on PORT.
    internal: {
      ...shared,
      ...wallet,
      ...embeddedPublicUrl(env, gatewayConfig.PORT),
      PORT: '0',
      HOST: '127.0.0.1',
    },
    gateway: { ...shared, ...walletJwtIssuer(env.JWT_ISSUERS, wallet) },
    credentialEvents: true,
    devSignIn: true,
  });
  const url = services.gateway.server.url;
  if (!quiet) printBanner(env, url, generatedOperatorToken, services.servers, wallet);
  return { url, operatorToken: shared.OPERATOR_TOKEN!, stop: services.stop };
}

/** Status-list uris (mandates' PUBLIC_BASE_URL) name the gateway's loopback address, unless set. */
function embeddedPublicUrl(env: NodeJS.ProcessEnv, port: number): Record<string, string> {
  if (env.PUBLIC_BASE_URL || port === 0) return {};
  return { PUBLIC_BASE_URL: `http://127.0.0.1:${port}` };
}

function walletLine(env: NodeJS.ProcessEnv, wallet: Record<string, string>): string {
  if (!wallet.WALLET_PUBLIC_URL) return 'off (set PORT or WALLET_PUBLIC_URL)';
  const trusted =
    env.NODE_ENV !== 'production' &&
    ['1', 'true', 'yes'].includes(wallet.WALLET_TRUST_TEST_ISSUER!.toLowerCase());
  return trusted
    ? `TEST PID issuer ${TEST_PID_ISSUER_URL} trusted (never in production; scripts/test-wallet.ts)`
    : 'only WALLET_TRUSTED_ISSUERS (the TEST PID issuer is not trusted)';
}

function printBanner(
  env: NodeJS.ProcessEnv,
  url: string,
  operatorToken: string | undefined,
  servers: Record<string, RunningServer>,
  wallet: Record<string, string>,
) {
  const part = (real: string | undefined, embedded: string, realName: string) =>
    real ? `${realName}` : `EMBEDDED — ${embedded}`;
  const lines = [
    '',
    '================================================================================',
    '  Mandate service',
    `  API:            ${url}   (OpenAPI: ${url}/v1/openapi.json)`,
    `  Event bus:      ${part(env.AMQP_URL, 'in-process', 'RabbitMQ')}`,
    `  Stores:         ${part(env.MONGO_URL, 'in memory', 'MongoDB')}`,
    `  Rate limiter:   ${part(env.REDIS_URL, 'in memory, per process', 'Redis')}`,
    `  Signing key:    ${env.KMS_KEY_ID || env.SIGNING_KEY_IDS ? `AWS KMS (${env.KMS_KEY_ID || env.SIGNING_KEY_IDS})` : env.LOCAL_SIGNING_KEY || env.LOCAL_SIGNING_KEY_FILE ? 'local ES256 key from configuration' : 'EMBEDDED — ES256 key generated at start'}`,
    `  Wallet (PID):   ${walletLine(env, wallet)}`,
    `  Services:       ${Object.entries(servers)
      .map(([n, s]) => `${n} ${s.url}`)
      .join(', ')}`,
  ];
  if (!env.MONGO_URL) lines.push('', '  !! Data lives in memory and is LOST ON RESTART. !!');
  if (!env.MONGO_URL) lines.push('  Memory: ~0.7 GB of heap per 1M audit events (bench:memory-stores)');
  lines.push(
    '',
    '  Next: README.md, section "API walk-through" (every call, step by step);',
    `        the API reference is docs/API.md and ${url}/v1/openapi.json.`,
    `  Dashboard:      ${url}/dashboard/   (README, section "Dashboard")`,
  );
  if (operatorToken) {
    lines.push(
      '',
      `  Operator token (shown once): ${operatorToken}`,
      '  Into your shell, for the walk-through (README.md):',
      `  export API=${url}`,
      `  export OPERATOR_TOKEN=${operatorToken}`,
    );
  }
  lines.push('================================================================================', '');
  process.stdout.write(lines.join('\n') + '\n');
}

if (require.main === module) {
  // A person at a terminal reads lines; anything else (a log collector, the tests) gets the JSON.
  if (process.stdout.isTTY) setLogDestination(readableLogStream());
  startEmbedded()
    .then((stack) => {
      const shutdown = () => {
        stack.stop().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      };
      process.once('SIGINT', shutdown);
      process.once('SIGTERM', shutdown);
    })
    .catch((err) => {
      reportStartFailure(err);
      process.exit(1);
    });
}
