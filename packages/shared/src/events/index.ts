/**
 * @mandate/shared/events (layer 4 of 8, docs/SERVICE-CONVENTIONS.md, "The shared package's layers").
 * Audit events as contracts, the event bus (RabbitMQ, in-process) and the outbox.
 * Imports core, observability and mandate.
 */
export * from './event-types';
export * from './event-data';
export * from './events';
export * from './bus';
export * from './outbox';
