/**
 * The whole product in this process with its in-memory stores, like `npm start`
 * (scripts/embedded.ts), but keeping a handle on every store so a test can read them.
 */
import { randomBytes } from 'node:crypto';
import {
  InProcessBus,
  createLogger,
  startService,
  type BaseConfig,
  type ServiceMain,
  type StartOptions,
  type StartedService,
} from '@mandate/shared';
import { service as audit } from '../../services/audit/src/service';
import { service as gateway } from '../../services/gateway/src/service';
import { service as identity } from '../../services/identity/src/service';
import { service as mandates } from '../../services/mandates/src/service';
import { service as verify } from '../../services/verify/src/service';

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
  // The steps of every service's main.ts (startService), as scripts/embedded.ts takes them.
  const run = async <C extends BaseConfig, D, O>(
    main: ServiceMain<C, D, O>,
    env: NodeJS.ProcessEnv,
    overrides: StartOptions<O>['overrides'],
  ): Promise<StartedService<C, D>> => {
    const started = await startService(main, env, { overrides, logLevel: level });
    stops.push(started.stop);
    return started;
  };
  try {
    const identityService = await run(identity, internal, { publisher: bus });
    // No expiry sweeper: nothing may change a store between two requests but the requests.
    const mandatesService = await run(
      mandates,
      { ...internal, EXPIRY_SWEEP_INTERVAL_MS: '0' },
      { publisher: bus },
    );
    const mandatesUrl = mandatesService.server.url;
    const verifyService = await run(verify, { ...internal, MANDATES_URL: mandatesUrl }, { publisher: bus });
    const auditService = await run(audit, { ...internal, MANDATES_URL: mandatesUrl }, { source: bus });
    const gatewayService = await run(
      gateway,
      {
        ...internal,
        ...gatewayEnv,
        OPERATOR_TOKEN: operatorToken,
        MANDATES_URL: mandatesUrl,
        VERIFY_URL: verifyService.server.url,
        IDENTITY_URL: identityService.server.url,
        AUDIT_URL: auditService.server.url,
      },
      { publisher: bus },
    );
    return {
      url: gatewayService.server.url,
      operatorToken,
      stores: {
        mandates: mandatesService.deps.store,
        identity: identityService.deps.store,
        audit: auditService.deps.store,
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
