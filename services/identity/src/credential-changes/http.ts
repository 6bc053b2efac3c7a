import { INTERNAL_TOKEN_HEADER } from '@mandate/shared/core';
import { implement, implementRaw, type Implementation } from '@mandate/shared/http';
import { internalRoutes } from '../contract';
import type { Deps } from '../deps';
import { credentialChangesSince } from './credential-changes';

/** For the gateway: the credential epoch and what changed since the one it knows, asked or held open. */
export const credentialChangeInternalHandlers = (deps: Deps): Implementation[] => [
  implement(internalRoutes.credentialChanges)(async ({ body }) => ({
    status: 200,
    body: await credentialChangesSince(deps, body.since),
  })),
  implementRaw(internalRoutes.credentialFeed)(async ({ query }, req, res) => {
    if (!deps.credentialFeed) {
      res.status(404).json({ error: 'NOT_FOUND', message: 'This identity serves no credential feed' });
      return;
    }
    // The internal token authenticated the request (it ends the feed when it runs out).
    const expiresAt = internalTokenExpiry(req.headers[INTERNAL_TOKEN_HEADER] as string);
    deps.credentialFeed.serve(res, query?.since, expiresAt);
  }),
];

/**
 * When the caller's internal token runs out, in ms: its JWT `exp`. Read only after the internal
 * token middleware verified the token, so the claim is the gateway's own.
 */
function internalTokenExpiry(token: string): number {
  const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as {
    exp?: unknown;
  };
  if (typeof payload.exp !== 'number') throw new Error('internal token without exp');
  return payload.exp * 1000;
}
