import { readFileSync } from 'node:fs';
import path from 'node:path';
import { EVENT_TYPES, parseEventMessage } from '../src/events';
import { anyEvent } from '../src/testing';
import { PREVIOUS_EVENT_TYPES, previousAuditEventSchema } from './fixtures/previous-release/events';

/**
 * Two consecutive releases run side by side during a rolling upgrade (docs/OPERATIONS.md, "Rolling
 * upgrade"), so events change additively within a major version (docs/DECISIONS.md, "Events and
 * contracts change additively within a major version"): the current consumer reads what the
 * previous release produced, and the previous release's consumer reads what the current one
 * produces. The previous release is its frozen schema and events (fixtures/previous-release).
 */
const PREVIOUS_EVENTS = JSON.parse(
  readFileSync(path.join(__dirname, 'fixtures', 'previous-release', 'events.json'), 'utf8'),
) as Record<string, unknown>[];

describe('events across consecutive releases', () => {
  it("when the current consumer reads a message of the previous release's events, then it takes each, field for field", () => {
    const parsed = parseEventMessage(Buffer.from(JSON.stringify(PREVIOUS_EVENTS)));
    expect(parsed).toEqual({ events: PREVIOUS_EVENTS, invalid: [], batch: true });
  });

  it("when the previous release's consumer reads an event the current producer built, then it takes it, losing only fields it does not know", () => {
    const event = anyEvent({
      type: 'MANDATE_CREATED',
      tenantId: 'ten_01m8f3a2b4c6d8e0f2g4h6j8k1',
      resource: { type: 'mandate', id: 'mdt_01m8f3a2b4c6d8e0f2g4h6j8k4' },
      data: { agent: { id: 'agent-1' } },
      caller: {
        tenantId: 'ten_01m8f3a2b4c6d8e0f2g4h6j8k1',
        actor: { type: 'api_key', key_id: 'key_1' },
        permissions: [],
        requestId: 'req_1',
      },
    });
    // As audit stores it, with its place in the tenant's log: a field the previous release lacks.
    const stored = { ...event, seq: 7 };
    const wire = JSON.parse(JSON.stringify(stored)) as unknown;
    const { seq: _added, ...known } = stored;
    expect(previousAuditEventSchema.safeParse(wire)).toEqual({ success: true, data: known });
  });

  it('when the event types are compared, then none the previous release knew is gone', () => {
    expect(PREVIOUS_EVENT_TYPES.filter((t) => !(EVENT_TYPES as readonly string[]).includes(t))).toEqual([]);
  });
});
