import { EVENT_TYPES, type AuditEvent, type EventOf, type EventType, type WebhookPayload } from './generated';

const known: ReadonlySet<string> = new Set(EVENT_TYPES);

/** Whether `type` is an event type this client knows; a newer service may send types it does not. */
export function isEventType(type: unknown): type is EventType {
  return typeof type === 'string' && known.has(type);
}

/**
 * Whether `event` is of `type`, narrowing its `data` to that type's:
 * `if (isEventOf(event, 'MANDATE_REVOKED')) console.log(event.data.reason)`.
 */
export function isEventOf<T extends EventType>(event: AuditEvent, type: T): event is EventOf<T> {
  return event.type === type;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A webhook delivery's body (docs/WEBHOOKS.md, "What a delivery looks like"), as the raw text or
 * already parsed (what `standardwebhooks`' verify returns), as a WebhookPayload that narrows on
 * `type`. Verify the signature first: this reads, it authenticates nothing. Returns null for a
 * delivery of a type this client does not know (`webhook.test`, or a type newer than the client):
 * answer it 2xx and let it pass. Throws a TypeError for a body that is no delivery. It checks the
 * envelope; each type's `data` is held to its schema by the service (docs/API.md#events).
 */
export function parseWebhookPayload(body: unknown): WebhookPayload | null {
  const value: unknown = typeof body === 'string' ? JSON.parse(body) : body;
  if (!isObject(value) || typeof value.type !== 'string' || typeof value.timestamp !== 'string')
    throw new TypeError('not a webhook delivery: {type, timestamp, data} expected');
  const event = value.data;
  if (!isObject(event) || event.type !== value.type || typeof event.id !== 'string' || !isObject(event.data))
    throw new TypeError('not a webhook delivery: data is not the event of its type');
  return isEventType(value.type) ? (value as WebhookPayload) : null;
}
