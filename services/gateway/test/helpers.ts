import express, { type Express } from 'express';
import { INTERNAL_SERVICES, ServiceClient, requireInternalToken } from '@mandate/shared';
import { testTokens } from '@mandate/shared/testing';
import type { Upstreams } from '../src/app';

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
