import { EVENT_TYPES as SERVICE_EVENT_TYPES } from '@mandate/shared/events';
import {
  EVENT_TYPES,
  isEventOf,
  isEventType,
  parseWebhookPayload,
  type AuditEvent,
  type EventOf,
  type MandateEvent,
  type MandateRevokedEventData,
  type WebhookPayload,
} from '../src';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Expect<T extends true> = T;

/** An integrator's handler: it narrows on `type` and reads each type's data without a cast. */
function handle(payload: WebhookPayload): string {
  switch (payload.type) {
    case 'MANDATE_REVOKED': {
      // Compile-time: the data is MANDATE_REVOKED's, not a record of unknowns.
      type Checks = [Expect<Equal<typeof payload.data.data, MandateRevokedEventData>>];
      const checks: Checks | undefined = undefined;
      void checks;
      const { state, version, reason } = payload.data.data;
      return `revoked ${state} v${version} ${reason ?? '-'}`;
    }
    case 'VERIFICATION_PERFORMED':
      return `verified ${payload.data.data.decision} ${payload.data.data.input.mandate_id}`;
    case 'API_KEY_ROTATED':
      // @ts-expect-error a member no schema of API_KEY_ROTATED has
      return `rotated ${payload.data.data.decision}`;
    default:
      return `other ${payload.type}`;
  }
}

const envelope = {
  tenant_id: 'tnt_01',
  actor: { type: 'api_key' as const, key_id: 'key_01' },
  request_id: null,
};
const delivery = (type: string, data: Record<string, unknown>) => ({
  type,
  timestamp: '2026-11-28T12:00:00.000Z',
  data: {
    id: 'evt_01jdqv8k3mzq4y6t2n9c0w5hxr',
    type,
    occurred_at: '2026-11-28T12:00:00.000Z',
    resource: { type: 'mandate', id: 'mdt_01' },
    ...envelope,
    data,
  },
});

describe('the typed events', () => {
  it('when the client is generated, then it knows the service’s event types, each with its data type', () => {
    expect([...EVENT_TYPES]).toEqual([...SERVICE_EVENT_TYPES]);
    type Checks = [
      Expect<Equal<MandateEvent['type'], AuditEvent['type']>>,
      Expect<Equal<Extract<MandateEvent, { type: 'MANDATE_REVOKED' }>, EventOf<'MANDATE_REVOKED'>>>,
    ];
    const checks: Checks | undefined = undefined;
    expect(checks).toBeUndefined();
  });

  it('when a webhook body is parsed, then the handler narrows on its type and reads that type’s data', () => {
    const revoked = JSON.stringify(
      delivery('MANDATE_REVOKED', {
        previous_state: 'ACTIVE',
        state: 'REVOKED',
        version: 3,
        reason: 'fraud',
      }),
    );
    const verified = delivery('VERIFICATION_PERFORMED', {
      input: { mandate_id: 'mdt_01', action: 'payments:create' },
      decision: 'DENY',
      reason: 'AMOUNT_EXCEEDED',
      decision_id: 'dec_01',
      mandate_version: 1,
    });
    expect([parseWebhookPayload(revoked), parseWebhookPayload(verified)].map((p) => handle(p!))).toEqual([
      'revoked REVOKED v3 fraud',
      'verified DENY mdt_01',
    ]);
  });

  it('when a delivery is of a type the client does not know (webhook.test), then it is null; when it is no delivery, then a TypeError', () => {
    expect(parseWebhookPayload(delivery('webhook.test', { endpoint_id: 'whe_01' }))).toBeNull();
    for (const body of [
      '[]',
      { type: 'MANDATE_REVOKED' },
      { ...delivery('MANDATE_REVOKED', {}), timestamp: 1 },
      { ...delivery('MANDATE_REVOKED', {}), type: 'MANDATE_SUSPENDED' },
      { ...delivery('MANDATE_REVOKED', {}), data: { type: 'MANDATE_REVOKED', id: 'evt_01', data: null } },
    ])
      expect(() => parseWebhookPayload(body)).toThrow(TypeError);
  });

  it('when an event from the list is checked by type, then it narrows to that type', () => {
    const event: AuditEvent = {
      ...delivery('MANDATE_REVOKED', { previous_state: 'ACTIVE', state: 'REVOKED', version: 2 }).data,
      type: 'MANDATE_REVOKED',
    };
    const versions = [event].filter((e) => isEventOf(e, 'MANDATE_REVOKED')).map((e) => e.data.version);
    expect(versions).toEqual([2]);
    expect(isEventOf(event, 'MANDATE_SUSPENDED')).toBe(false);
    expect([isEventType('API_CALL'), isEventType('webhook.test'), isEventType(7)]).toEqual([
      true,
      false,
      false,
    ]);
  });
});
