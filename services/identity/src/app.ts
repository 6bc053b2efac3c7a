import { PeriodicTask } from '@mandate/shared/core';
import { ownRelayUnlessGiven } from '@mandate/shared/events';
import { internalServiceApp } from '@mandate/shared/http';
import { outboxAppLifecycle } from '@mandate/shared/service';
import { endRotationGraces, expireStagingKeys } from './api-keys/api-keys';
import { CredentialChangeFeed } from './credential-changes/feed';
import {
  identityVerificationInternalRoutes,
  identityVerificationRoutes,
  walletResponseRoutes,
} from './identity-verifications/http';
import { gatewayInternalRoutes, publicRoutes } from './http/routes';

import type { Deps } from './deps';
export type { Deps };

export function createApp(given: Deps) {
  // Every write stores its events in the outbox; this relay publishes them until the broker confirms.
  const ownRelay = ownRelayUnlessGiven(given);
  // The gateways' credential feeds: one epoch read per tick for all of them (docs/DECISIONS.md, "Credential changes").
  const credentialFeed = new CredentialChangeFeed(
    given.store.credentialChanges,
    given.credentialFeedTickMs ?? 250,
    given.logger,
  );
  const deps: Deps = { ...given, relay: given.relay ?? ownRelay, credentialFeed };
  // Every instance may sweep: the conditional revoke lets one of them win each key and announce it.
  const stagingSweeper = deps.stagingSweepIntervalMs
    ? new PeriodicTask(
        deps.stagingSweepIntervalMs,
        // The same pass ends rotation grace periods (docs/API.md#api-key-rotation-grace).
        async () => {
          await expireStagingKeys(deps);
          await endRotationGraces(deps);
        },
        (err) => deps.logger.warn({ err }, 'staging key sweep failed; retrying on the next tick'),
      )
    : undefined;
  const app = internalServiceApp('identity', {
    readiness: async () => {
      const checks: Record<string, string> = {};
      try {
        await deps.store.ping();
        checks.store = 'ok';
      } catch (err) {
        checks.store = `down: ${(err as Error).message}`;
      }
      checks.publisher = 'ok';
      return checks;
    },
    tokens: deps.tokens,
    logger: deps.logger,
    // The wallet's form-encoded direct_post, before the JSON-only parser.
    beforeJson: [walletResponseRoutes(deps)],
    handlers: [
      publicRoutes(deps),
      identityVerificationRoutes(deps),
      gatewayInternalRoutes(deps),
      identityVerificationInternalRoutes(deps),
    ],
  });

  const lifecycle = outboxAppLifecycle(app, ownRelay, [stagingSweeper, credentialFeed]);
  return {
    /** What the routes run the use cases with, for what no route triggers (the staging-key sweep). */
    deps,
    ...lifecycle,
    // The feeds end before the server closes, which would wait for the answers they hold open
    // (the lifecycle stops its tasks after the server; a second stop finds nothing to end).
    async stop() {
      await credentialFeed.stop();
      await lifecycle.stop();
    },
  };
}

export type IdentityApp = ReturnType<typeof createApp>;
