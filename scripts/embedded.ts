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
  type RunningServer,
} from '@mandate/shared';
import * as mandates from '../services/mandates/src/wiring';
import { createApp as createMandates } from '../services/mandates/src/app';
import { configSchema as mandatesConfig } from '../services/mandates/src/config';
import * as verify from '../services/verify/src/wiring';
import { createApp as createVerify } from '../services/verify/src/app';
import { configSchema as verifyConfig } from '../services/verify/src/config';
import * as identity from '../services/identity/src/wiring';
import { createApp as createIdentity } from '../services/identity/src/app';
import { configSchema as identityConfig } from '../services/identity/src/config';
import * as audit from '../services/audit/src/wiring';
import { createApp as createAudit } from '../services/audit/src/app';
import { auditConfigSchema } from '../services/audit/src/config';
import * as gateway from '../services/gateway/src/wiring';
import { createApp as createGateway } from '../services/gateway/src/app';
import { gatewayConfigSchema } from '../services/gateway/src/config';

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

  const run = async <D>(
    name: string,
    wired: { deps: D; close(): Promise<void> },
    app: { start(port?: number, host?: string): Promise<RunningServer>; stop(): Promise<void> },
    port = 0,
    host = '127.0.0.1',
  ) => {
    servers[name] = await app.start(port, host);
    stops.push(async () => {
      await app.stop();
      await wired.close();
    });
    return servers[name]!;
  };

  try {
    // A bad gateway setting (PORT, …) is reported before four services start for nothing.
    parseConfig(gatewayConfigSchema, shared);
    const identityWired = await identity.wire(
      parseConfig(identityConfig, internal),
      createLogger('identity', level),
      { publisher: bus },
    );
    const identityServer = await run('identity', identityWired, createIdentity(identityWired.deps));

    const mandatesWired = await mandates.wire(
      parseConfig(mandatesConfig, internal),
      createLogger('mandates', level),
      { publisher: bus },
    );
    const mandatesServer = await run('mandates', mandatesWired, createMandates(mandatesWired.deps));

    const verifyWired = await verify.wire(
      parseConfig(verifyConfig, { ...internal, MANDATES_URL: mandatesServer.url }),
      createLogger('verify', level),
      { publisher: bus },
    );
    const verifyServer = await run('verify', verifyWired, createVerify(verifyWired.deps));

    const auditWired = await audit.wire(
      parseConfig(auditConfigSchema, { ...internal, MANDATES_URL: mandatesServer.url }),
      createLogger('audit', level),
      { source: bus },
    );
    const auditServer = await run('audit', auditWired, createAudit(auditWired.deps));

    const gatewayConfig = parseConfig(gatewayConfigSchema, {
      ...shared,
      MANDATES_URL: mandatesServer.url,
      VERIFY_URL: verifyServer.url,
      IDENTITY_URL: identityServer.url,
      AUDIT_URL: auditServer.url,
    });
    const gatewayWired = await gateway.wire(gatewayConfig, createLogger('gateway', level), {
      publisher: bus,
      // Key revocations and role changes evict the gateway's cached credentials at once.
      credentialEvents: bus,
    });
    const gatewayServer = await run(
      'gateway',
      gatewayWired,
      createGateway(gatewayWired.deps),
      gatewayConfig.PORT,
      gatewayConfig.HOST,
    );

    if (!quiet) printBanner(env, gatewayServer.url, generatedOperatorToken, servers);
    return {
      url: gatewayServer.url,
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
