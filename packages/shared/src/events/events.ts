import { z } from 'zod';
import { actorSchema, type CallerContext } from '../core/internal-token';
import { newId } from '../core/ids';
import { currentTraceIds } from '../observability/tracing';
import { API_CALL_VIA, CLIENT_HEADER, EVENT_TYPE_DESCRIPTIONS, EVENT_TYPES } from './event-types';
import type { EventData } from './event-data';

export { API_CALL_VIA, CLIENT_HEADER, EVENT_TYPE_DESCRIPTIONS, EVENT_TYPES };
export {
  EVENT_DATA_SCHEMAS,
  EVENT_OWNERS,
  eventDataIssues,
  eventDataOrNull,
  parseEventData,
  type EventData,
} from './event-data';

export const eventTypeSchema = z.enum(EVENT_TYPES);
export type EventType = z.infer<typeof eventTypeSchema>;

export const auditEventSchema = z.object({
  id: z.string().regex(/^evt_[0-9a-z]{26}$/),
  /** null only for platform events that precede any tenant (an onboarding request). */
  tenant_id: z.string().nullable(),
  type: eventTypeSchema,
  occurred_at: z.iso.datetime(),
  actor: actorSchema,
  request_id: z.string().nullable(),
  resource: z.object({ type: z.string(), id: z.string() }).nullable(),
  /**
   * Any JSON object (an array, null or a scalar is refused). A loose object rather than a record of
   * unknowns: the same check at a third of the cost on audit's ingest (docs/PERFORMANCE.md,
   * "Tamper-evident log benchmark (issue 42)").
   */
  data: z.looseObject({}),
  /** The trace (W3C trace id) of the request that caused it; present when tracing is on. */
  trace_id: z
    .string()
    .regex(/^[0-9a-f]{32}$/)
    .optional(),
  /** The span that built it (the service's server span), when recorded; its message is published as that span's child. */
  span_id: z
    .string()
    .regex(/^[0-9a-f]{16}$/)
    .optional(),
  /**
   * The event's place in its tenant's tamper-evident log (1, 2, … gap-free, in the order stored;
   * docs/API.md#proving-the-log): set by audit when it stores the event, absent before that and
   * on platform events.
   */
  seq: z.int().min(1).optional(),
});
export type AuditEvent = z.infer<typeof auditEventSchema>;

/**
 * What a producer gives buildEvent: its data typed by its type's schema (event-data.ts), so data
 * off the schema fails to compile. Over a union of types it is a union of inputs, one per type.
 */
export type EventInput<T extends EventType = EventType> = T extends EventType
  ? {
      type: T;
      tenantId: string | null;
      resource: { type: string; id: string } | null;
      data: EventData<T>;
      /** The caller that caused it; omitted for system work such as the expiry sweeper. */
      caller?: CallerContext;
      occurredAt?: Date;
    }
  : never;

// The ISO form of the last millisecond an event was stamped with: a busy process stamps several
// events per millisecond, and Date→ISO is most of what building an event costs.
let lastStampMs = NaN;
let lastStampIso = '';

function isoAt(ms: number): string {
  if (ms !== lastStampMs) {
    lastStampIso = new Date(ms).toISOString();
    lastStampMs = ms;
  }
  return lastStampIso;
}

/** Sees every event buildEvent makes; set by the tests only (watchBuiltEvents). */
let builtEventWatcher: ((event: AuditEvent) => void) | undefined;

/**
 * Has `watcher` see every event buildEvent makes from now on (none: `undefined`). The tests hold
 * each to its type's data schema with it (test/support/event-contract.ts), so a producer emitting
 * data off its schema fails the test that ran it; production sets none and parses nothing
 * (docs/DECISIONS.md, "Event data schemas").
 */
export function watchBuiltEvents(watcher: ((event: AuditEvent) => void) | undefined): void {
  builtEventWatcher = watcher;
}

/**
 * Builds a complete event; the caller's actor and request id are carried over. The data is typed,
 * not parsed: a parse per event would cost every verify call CPU, so the schemas are checked at
 * compile time here and in tests (docs/DECISIONS.md, "Event data schemas").
 */
export function buildEvent<T extends EventType>(input: EventInput<T>): AuditEvent {
  const event = assembleEvent(input);
  builtEventWatcher?.(event);
  return event;
}

/**
 * The event around data of any shape, unwatched: buildEvent's work, and how a test of the
 * envelope's path (bus, outbox, stores) makes one whose data no type allows (testing's anyEvent).
 */
export function assembleEvent(
  input: Omit<EventInput, 'type' | 'data'> & { type: EventType; data: Record<string, unknown> },
): AuditEvent {
  const event: AuditEvent = {
    id: newId('evt'),
    tenant_id: input.tenantId,
    type: input.type,
    occurred_at: isoAt(input.occurredAt ? input.occurredAt.getTime() : Date.now()),
    actor: input.caller?.actor ?? { type: 'system' },
    request_id: input.caller?.requestId ?? null,
    resource: input.resource,
    data: input.data,
  };
  // Set only when tracing is on, so an event without a trace keeps its shape (and its cost).
  const ids = currentTraceIds();
  if (ids) {
    event.trace_id = ids.trace_id;
    if (ids.span_id) event.span_id = ids.span_id;
  }
  return event;
}
