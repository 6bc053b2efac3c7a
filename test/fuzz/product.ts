/**
 * The whole product in this process with its in-memory stores, like `npm start`
 * (scripts/embedded.ts), but keeping a handle on every store so a test can read them.
 */
import { randomBytes } from 'node:crypto';
import { InProcessBus, createLogger, parseConfig, type RunningServer } from '@mandate/shared';
import * as mandates from '../../services/mandates/src/wiring';
import { createApp as createMandates } from '../../services/mandates/src/app';
import { configSchema as mandatesConfig } from '../../services/mandates/src/config';
import * as verify from '../../services/verify/src/wiring';
import { createApp as createVerify } from '../../services/verify/src/app';
import { configSchema as verifyConfig } from '../../services/verify/src/config';
import * as identity from '../../services/identity/src/wiring';
import { createApp as createIdentity } from '../../services/identity/src/app';
import { configSchema as identityConfig } from '../../services/identity/src/config';
import * as audit from '../../services/audit/src/wiring';
import { createApp as createAudit } from '../../services/audit/src/app';
import { auditConfigSchema } from '../../services/audit/src/config';
import * as gateway from '../../services/gateway/src/wiring';
import { createApp as createGateway } from '../../services/gateway/src/app';
import { gatewayConfigSchema } from '../../services/gateway/src/config';

export interface Product {
  url: string;
  operatorToken: string;
  stores: { mandates: object; identity: object; audit: object };
  bus: InProcessBus;
  stop(): Promise<void>;
}

/** `gatewayEnv` adds gateway settings (PLAN_OVERRIDES...); no REDIS_URL/AMQP_URL/MONGO_URL ever: memory adapters only. */
export async function startProduct(gatewayEnv: Record<string, string> = {}): Promise<Product> {
  const level = process.env.FUZZ_LOG_LEVEL ?? 'silent';
  const bus = new InProcessBus(createLogger('bus', level));
  const operatorToken = randomBytes(24).toString('base64url');
  const base = {
    PATH: process.env.PATH,
    INTERNAL_TOKEN_SECRET: randomBytes(32).toString('hex'),
    LOG_LEVEL: level,
  };
  const internal = { ...base, PORT: '0', HOST: '127.0.0.1' };
  const stops: (() => Promise<void>)[] = [];
  const run = async (
    wired: { close(): Promise<void> },
    app: { start(port?: number): Promise<RunningServer>; stop(): Promise<void> },
  ) => {
    const server = await app.start(0);
    stops.push(async () => {
      await app.stop();
      await wired.close();
    });
    return server;
  };
  try {
    const identityWired = await identity.wire(
      parseConfig(identityConfig, internal),
      createLogger('identity', level),
      { publisher: bus },
    );
    const identityServer = await run(identityWired, createIdentity(identityWired.deps));
    // No expiry sweeper: nothing may change a store between two requests but the requests.
    const mandatesWired = await mandates.wire(
      parseConfig(mandatesConfig, { ...internal, EXPIRY_SWEEP_INTERVAL_MS: '0' }),
      createLogger('mandates', level),
      { publisher: bus },
    );
    const mandatesServer = await run(mandatesWired, createMandates(mandatesWired.deps));
    const verifyWired = await verify.wire(
      parseConfig(verifyConfig, { ...internal, MANDATES_URL: mandatesServer.url }),
      createLogger('verify', level),
      { publisher: bus },
    );
    const verifyServer = await run(verifyWired, createVerify(verifyWired.deps));
    const auditWired = await audit.wire(
      parseConfig(auditConfigSchema, { ...internal, MANDATES_URL: mandatesServer.url }),
      createLogger('audit', level),
      { source: bus },
    );
    const auditServer = await run(auditWired, createAudit(auditWired.deps));
    const gatewayWired = await gateway.wire(
      parseConfig(gatewayConfigSchema, {
        ...internal,
        ...gatewayEnv,
        OPERATOR_TOKEN: operatorToken,
        MANDATES_URL: mandatesServer.url,
        VERIFY_URL: verifyServer.url,
        IDENTITY_URL: identityServer.url,
        AUDIT_URL: auditServer.url,
      }),
      createLogger('gateway', level),
      { publisher: bus },
    );
    const gatewayServer = await run(gatewayWired, createGateway(gatewayWired.deps));
    return {
      url: gatewayServer.url,
      operatorToken,
      stores: {
        mandates: mandatesWired.deps.store,
        identity: identityWired.deps.store,
        audit: auditWired.deps.store,
      },
      bus,
      async stop() {
        for (const stop of stops.reverse()) await stop();
        await bus.close();
      },
    };
  } catch (err) {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    throw err;
  }
}
