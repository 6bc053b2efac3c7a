import express, { type Express } from 'express';
import { INTERNAL_SERVICES } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { ServiceClient, requireInternalToken } from '@mandate/shared/http';
import { CapturingPublisher, testTokens } from '@mandate/shared/testing';
import { createApp, type GatewayApp, type GatewayDeps, type Upstreams } from '../src/app';
import type { KeyResolver, ResolvedKey } from '../src/auth/key-resolver';

/** A key resolver that knows exactly these API key secrets. */
export function keysOf(keys: Record<string, ResolvedKey>): KeyResolver {
  return { resolve: async (secret) => keys[secret] ?? null, evict: () => undefined };
}

/**
 * A gateway for a test: its upstreams and keys are the test's; the rest (test tokens, a silent
 * logger, a capturing publisher, an operator token, an empty OpenAPI document) unless it says otherwise.
 */
export function testGateway(
  deps: Partial<GatewayDeps> & Pick<GatewayDeps, 'upstreams' | 'keys'>,
): GatewayApp {
  return createApp({
    tokens: testTokens,
    logger: createLogger('gateway-test', 'silent'),
    publisher: new CapturingPublisher(),
    operatorToken: 'operator-secret-for-tests',
    openApiDocument: () => ({}),
    ...deps,
  });
}

/** The four upstreams as clients of one stand-in server that plays every service. */
export function upstreamsAt(url: string): Upstreams {
  const client = () => new ServiceClient([url]);
  return { mandates: client(), verify: client(), identity: client(), audit: client() };
}

export async function closeUpstreams(upstreams: Upstreams): Promise<void> {
  await Promise.all(Object.values(upstreams).map((c) => c.close()));
}

/** A stand-in service behind the real internal-token check, with the raw body of every request. */
export function standInService(): Express {
  const app = express();
  app.use(requireInternalToken(testTokens, INTERNAL_SERVICES));
  app.use(express.raw({ type: () => true }));
  return app;
}
