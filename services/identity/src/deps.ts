import type { InternalTokens } from '@mandate/shared/core';
import type { Logger } from '@mandate/shared/observability';
import type { EventPublisher } from '@mandate/shared/events';
import type { IdentityDeps } from './common/deps';
import type { CredentialChangeFeed } from './credential-changes/feed';

/** What identity runs on; wire() builds it, createApp() serves it (src/http takes it from here, never from app.ts). */
/** The use cases' deps (store, clock, relay, staging-key TTL) and what the app around them needs. */
export interface Deps extends IdentityDeps {
  publisher: EventPublisher;
  tokens: InternalTokens;
  logger: Logger;
  /** The gateways' held credential feeds (createApp makes it; docs/DECISIONS.md, "Credential changes"). */
  credentialFeed?: CredentialChangeFeed;
  /** How often the feed reads the epoch for the gateways holding it; default 250 ms. */
  credentialFeedTickMs?: number;
  /** How often the outbox relay looks for events the fast path missed (broker down, restart); default 1 s. */
  outboxPollIntervalMs?: number;
  /** While started, revoke expired staging keys this often; absent or 0 → no sweeper (resolve and activate still refuse them). */
  stagingSweepIntervalMs?: number;
}
