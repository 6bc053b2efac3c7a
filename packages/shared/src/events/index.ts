/**
 * @mandate/shared/events (layer 4 of 8, docs/SERVICE-CONVENTIONS.md, "The shared package's layers").
 * Audit events as contracts, the event bus (RabbitMQ, in-process) and the outbox.
 * Imports core, observability and mandate.
 */

export { BatchingPublisher, DEFAULT_PUBLISH_BATCH_DELAY_MS } from './bus/batching';
export { parseEventMessage } from './bus/encoding';
export { InProcessBus } from './bus/in-process';
export { RabbitEventSource } from './bus/rabbit-consumer';
export { RabbitPublisher } from './bus/rabbit-publisher';
export { ReconnectingConsumer } from './bus/reconnecting-consumer';
export { amqpTopology, type AmqpTopology, assertTopology } from './bus/topology';
export { type EventHandler, type EventPublisher, type EventSource } from './bus/types';
export { EVENT_DATA_SCHEMAS, type EventData, eventDataIssues, eventDataOrNull } from './event-data';
export { CLIENT_HEADER, EVENT_TYPES } from './event-types';
export { type AuditEvent, auditEventSchema, buildEvent, type EventInput, type EventType } from './events';
export { JournaledPublisher, journalLines } from './outbox/journal';
export { MemoryOutbox } from './outbox/memory-outbox';
export { type EventRelay, OutboxRelay, type OutboxStore, ownRelayUnlessGiven } from './outbox/relay';
export { defaultSpoolDir, SpoolingPublisher } from './outbox/spool';
