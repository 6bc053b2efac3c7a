/**
 * The whole product in this process with its in-memory stores, like `npm start`
 * (scripts/embedded.ts), but keeping a handle on every store so a test can read them.
 */
import { randomBytes } from 'node:crypto';
import { createLogger } from '@mandate/shared/observability';
import { InProcessBus } from '@mandate/shared/events';
import { startInProcess } from '../../scripts/embedded';

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
  const internal = {
    ...base,
    PORT: '0',
    HOST: '127.0.0.1',
    // Identity verification on, so its routes answer as in production (the URL only names the wallet's links).
    WALLET_PUBLIC_URL: 'http://127.0.0.1:8080',
    WALLET_SUBJECT_SECRET: randomBytes(32).toString('hex'),
  };
  const services = await startInProcess({
    bus,
    logLevel: level,
    internal,
    gateway: { ...internal, ...gatewayEnv, OPERATOR_TOKEN: operatorToken },
    // No expiry sweeper: nothing may change a store between two requests but the requests.
    mandates: { EXPIRY_SWEEP_INTERVAL_MS: '0' },
  });
  return {
    url: services.gateway.server.url,
    operatorToken,
    stores: {
      mandates: services.mandates.deps.store,
      identity: services.identity.deps.store,
      audit: services.audit.deps.store,
    },
    bus,
    stop: services.stop,
  };
}
