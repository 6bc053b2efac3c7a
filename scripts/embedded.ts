/**
 * `npm start`: all five services in one process, each on its own port, sharing an in-process
 * event bus. Every adapter still follows its variable (AMQP_URL, MONGO_URL, REDIS_URL), so the
 * same launcher runs against real infrastructure when those are set.
 */
import { randomBytes } from 'node:crypto';
import {
  InProcessBus,
  createLogger,
  parseConfig,
  reportStartFailure,
  startService,
  type BaseConfig,
  type RunningServer,
  type ServiceMain,
  type StartOptions,
  type StartedService,
} from '@mandate/shared';
import { service as audit } from '../services/audit/src/service';
import { service as gateway } from '../services/gateway/src/service';
import { service as identity } from '../services/identity/src/service';
import { service as mandates } from '../services/mandates/src/service';
import { service as verify } from '../services/verify/src/service';

export interface EmbeddedStack {
  url: string;
  operatorToken: string;
  stop(): Promise<void>;
}

export async function startEmbedded(
  env: NodeJS.ProcessEnv = process.env,
  quiet = false,
): Promise<EmbeddedStack> {
  const level = quiet ? 'silent' : (env.LOG_LEVEL ?? 'info');
  const bus = new InProcessBus(createLogger('bus', level));
  const generatedOperatorToken = env.OPERATOR_TOKEN ? undefined : randomBytes(24).toString('base64url');
  const shared = {
    ...env,
    INTERNAL_TOKEN_SECRET: env.INTERNAL_TOKEN_SECRET ?? randomBytes(32).toString('hex'),
    OPERATOR_TOKEN: env.OPERATOR_TOKEN ?? generatedOperatorToken,
  };
  // Internal services take any free port; only the gateway listens on PORT.
  const internal = { ...shared, PORT: '0', HOST: '127.0.0.1' };
  const stops: (() => Promise<void>)[] = [];
  const servers: Record<string, RunningServer> = {};

  // The same steps as each service's own main.ts (runService), with the shared bus as override.
  const run = async <C extends BaseConfig, D, O>(
    main: ServiceMain<C, D, O>,
    serviceEnv: NodeJS.ProcessEnv,
    overrides: StartOptions<O>['overrides'],
  ): Promise<StartedService<C, D>> => {
    const started = await startService(main, serviceEnv, { overrides, logLevel: level });
    servers[main.name] = started.server;
    stops.push(started.stop);
    return started;
  };

  try {
    // A bad gateway setting (PORT, …) is reported before four services start for nothing.
    parseConfig(gateway.configSchema, shared);
    const identityService = await run(identity, internal, { publisher: bus });
    const mandatesService = await run(mandates, internal, { publisher: bus });
    const mandatesUrl = mandatesService.server.url;
    const verifyService = await run(verify, { ...internal, MANDATES_URL: mandatesUrl }, { publisher: bus });
    const auditService = await run(audit, { ...internal, MANDATES_URL: mandatesUrl }, { source: bus });
    const gatewayService = await run(
      gateway,
      {
        ...shared,
        MANDATES_URL: mandatesUrl,
        VERIFY_URL: verifyService.server.url,
        IDENTITY_URL: identityService.server.url,
        AUDIT_URL: auditService.server.url,
      },
      // Key revocations and role changes evict the gateway's cached credentials at once.
      { publisher: bus, credentialEvents: bus },
    );

    const url = gatewayService.server.url;
    if (!quiet) printBanner(env, url, generatedOperatorToken, servers);
    return {
      url,
      operatorToken: shared.OPERATOR_TOKEN!,
      async stop() {
        // Gateway first (stops new work), then the services, then the bus drains.
        for (const stop of stops.reverse()) await stop();
        await bus.close();
      },
    };
  } catch (err) {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    throw err;
  }
}

function printBanner(
  env: NodeJS.ProcessEnv,
  url: string,
  operatorToken: string | undefined,
  servers: Record<string, RunningServer>,
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
    '  Dashboard: not built yet.',
  );
  if (operatorToken) {
    lines.push(
      '',
      `  Operator token (shown once): ${operatorToken}`,
      `  export OPERATOR_TOKEN=${operatorToken}`,
    );
  }
  lines.push('================================================================================', '');
  process.stdout.write(lines.join('\n') + '\n');
}

if (require.main === module) {
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
