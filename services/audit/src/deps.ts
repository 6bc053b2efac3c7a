import type { Clock, EventSource, InternalTokens, Logger } from '@mandate/shared';
import type { MandatesSource } from './evidence/mandates-source';
import type { EventStore } from './store/event-store';

/** What the audit service runs on; wire() builds it, createApp() serves it (src/http takes it from here, never from app.ts). */
export interface Deps {
  store: EventStore;
  /** Where audit events come from: RabbitMQ, or the embedded mode's InProcessBus. */
  source: EventSource;
  tokens: InternalTokens;
  logger: Logger;
  /** The mandates service, for the evidence export (MANDATES_URL); absent → the export answers 503. */
  mandates?: MandatesSource;
  clock?: Clock;
}
