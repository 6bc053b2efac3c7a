import type { Clock, InternalTokens } from '@mandate/shared/core';
import type { Logger } from '@mandate/shared/observability';
import type { EventPublisher, EventRelay } from '@mandate/shared/events';
import type { IdentityVerifications } from './domain/mandates';
import type { Signer } from './signing/signer';
import type { MandateSnapshots } from './snapshots/mandate-snapshots';
import type { StatusLists } from './status-lists/status-lists';
import type { MandateStore } from './store/mandate-store';

/** What mandates runs on; wire() builds it, createApp() serves it (src/http takes it from here, never from app.ts). */
export interface Deps {
  store: MandateStore;
  publisher: EventPublisher;
  signer: Signer;
  tokens: InternalTokens;
  logger: Logger;
  clock: Clock;
  /** Versioned snapshots verify reads (Redis); absent → none. */
  snapshots?: MandateSnapshots;
  /** Binds identity verifications at creation (IDENTITY_URL). */
  identityVerifications?: IdentityVerifications;
  /** While started, sweep expired mandates this often; absent or 0 → no sweeper. */
  sweepIntervalMs?: number;
  /** Publishes the events stored in the outbox with each change; absent → an OutboxRelay over store and publisher. */
  relay?: EventRelay;
  /** How often the relay looks for events the fast path missed (broker down, restart); default 1 s. */
  outboxPollIntervalMs?: number;
  /** The public URL status-list uris start with (PUBLIC_BASE_URL); default http://127.0.0.1:8080. */
  publicBaseUrl?: string;
  /** STATUS_LIST_TTL_SECONDS; default 60. */
  statusListTtlSeconds?: number;
  /** Built by createApp from the two settings above unless given. */
  statusLists?: StatusLists;
}
