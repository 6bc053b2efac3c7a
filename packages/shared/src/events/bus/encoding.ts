import { auditEventSchema, type AuditEvent } from '../events';

/** Most events carried by one message, so a consumer's unacked window stays bounded. */
export const MAX_EVENTS_PER_MESSAGE = 500;

/**
 * Splits a batch into the events of each message: one group per event type, in order of first
 * appearance (events of one type keep their order), at most MAX_EVENTS_PER_MESSAGE each.
 */
export function groupForMessages(events: AuditEvent[]): AuditEvent[][] {
  const first = events[0]!;
  // The common case: a batch of one type (API_CALLs, verifications).
  if (events.every((e) => e.type === first.type)) return chunk(events);
  const byType = new Map<string, AuditEvent[]>();
  for (const e of events) {
    const list = byType.get(e.type);
    if (list) list.push(e);
    else byType.set(e.type, [e]);
  }
  return [...byType.values()].flatMap(chunk);
}

function chunk(events: AuditEvent[]): AuditEvent[][] {
  if (events.length <= MAX_EVENTS_PER_MESSAGE) return [events];
  const out: AuditEvent[][] = [];
  for (let i = 0; i < events.length; i += MAX_EVENTS_PER_MESSAGE)
    out.push(events.slice(i, i + MAX_EVENTS_PER_MESSAGE));
  return out;
}

/**
 * The events of one message body: a single event object or a JSON array of them. Returns each
 * element validated on its own (so one bad element does not condemn the rest), or null when the
 * body is not JSON, not an object or array, or an empty array (the whole message is invalid).
 */
export function parseEventMessage(
  content: Buffer,
): { events: AuditEvent[]; invalid: { element: unknown; error: unknown }[]; batch: boolean } | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(content.toString('utf8'));
  } catch {
    return null;
  }
  if (Array.isArray(parsed)) {
    if (parsed.length === 0) return null;
    const events: AuditEvent[] = [];
    const invalid: { element: unknown; error: unknown }[] = [];
    for (const element of parsed) {
      const r = auditEventSchema.safeParse(element);
      if (r.success) events.push(r.data);
      else invalid.push({ element, error: r.error });
    }
    return { events, invalid, batch: true };
  }
  const r = auditEventSchema.safeParse(parsed);
  return r.success
    ? { events: [r.data], invalid: [], batch: false }
    : { events: [], invalid: [{ element: parsed, error: r.error }], batch: false };
}
