import { assembleEvent, type AuditEvent, type EventInput, type EventType } from '../events/events';

/**
 * An event of any type with any data, for tests of the envelope's path (bus, outbox, stores) that
 * care for no type's data: buildEvent itself takes only data its type's schema allows, and in tests
 * fails the test on any other (test/support/event-contract.ts).
 */
export function anyEvent(
  input: Omit<EventInput, 'type' | 'data'> & { type: EventType; data: Record<string, unknown> },
): AuditEvent {
  return assembleEvent(input);
}
