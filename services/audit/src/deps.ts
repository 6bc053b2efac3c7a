import type { Clock, InternalTokens } from '@mandate/shared/core';
import type { Logger } from '@mandate/shared/observability';
import type { EventPublisher, EventSource } from '@mandate/shared/events';
import type { MandatesSource } from './evidence/mandates-source';
import type { AuditStore } from './store/event-store';
import type { SecretBox } from './webhooks/secret-box';
import type { WebhookStore } from './webhooks/webhook-store';
import type { WebhookSettings } from './webhooks/worker';

/** Outbound webhooks (the endpoints API, the fan-out of the webhook queue, the delivery worker). */
export interface WebhookParts {
  store: WebhookStore;
  /** The webhook queue (RabbitMQ), or the embedded mode's in-process bus. */
  source: EventSource;
  /** Where the events of endpoint changes go (relayed from the store's outbox). */
  publisher: EventPublisher;
  box: SecretBox;
  settings: WebhookSettings;
  /** Jitter source of the retry schedule (tests pin it). */
  random?: () => number;
}

/** What the audit service runs on; wire() builds it, createApp() serves it (src/http takes it from here, never from app.ts). */
export interface Deps {
  store: AuditStore;
  /** Seconds between two rounds of signed checkpoints (AUDIT_CHECKPOINT_SECONDS, docs/API.md#proving-the-log); default 60. */
  checkpointSeconds?: number;
  /** Where audit events come from: RabbitMQ, or the embedded mode's InProcessBus. */
  source: EventSource;
  tokens: InternalTokens;
  logger: Logger;
  /** The mandates service, for the evidence export (MANDATES_URL); absent → the export answers 503. */
  mandates?: MandatesSource;
  clock?: Clock;
  /** Absent: no webhook routes, fan-out or worker (component tests of the events alone). */
  webhooks?: WebhookParts;
}
