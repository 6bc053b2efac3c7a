import { implement, type Implementation } from '@mandate/shared/http';
import { internalRoutes } from '../contract';
import type { Deps } from '../deps';
import { credentialChangesSince } from './credential-changes';

/** For the gateway: the credential epoch and what changed since the one it knows. */
export const credentialChangeInternalHandlers = (deps: Deps): Implementation[] => [
  implement(internalRoutes.credentialChanges)(async ({ body }) => ({
    status: 200,
    body: await credentialChangesSince(deps, body.since),
  })),
];
