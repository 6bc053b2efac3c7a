import { decodeJwt } from 'jose';
import { INTERNAL_TOKEN_HEADER, notFound } from '@mandate/shared/core';
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
    if (!deps.credentialFeed) throw notFound('This identity serves no credential feed');
    // The internal token middleware verified the token (and its exp); the feed ends when it runs out.
    const { exp } = decodeJwt(req.headers[INTERNAL_TOKEN_HEADER] as string);
    deps.credentialFeed.serve(res, query?.since, exp! * 1000);
  }),
];
