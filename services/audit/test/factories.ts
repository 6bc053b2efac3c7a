import { newId } from '@mandate/shared/core';
import { type AuditEvent, type EventInput, type EventType } from '@mandate/shared/events';
import { anyEvent } from '@mandate/shared/testing';
import type { WebhookDelivery } from '../src/webhooks/webhook';

/** A valid event for `tenantId`; every field can be overridden. Ids are monotonic, so later = newer. */
export function buildAuditEvent(
  tenantId: string | null,
  overrides: Partial<Omit<EventInput, 'type' | 'data'>> & {
    type?: EventType;
    data?: Record<string, unknown>;
    keyId?: string;
  } = {},
): AuditEvent {
  const { keyId, ...input } = overrides;
  return anyEvent({
    type: 'MANDATE_CREATED',
    tenantId,
    resource: { type: 'mandate', id: newId('mdt') },
    data: { note: 'test' },
    caller: {
      tenantId,
      actor: { type: 'api_key', key_id: keyId ?? 'key_01jtestkey0000000000000000' },
      permissions: [],
      requestId: 'req_test',
    },
    ...input,
  });
}

/** A PENDING delivery of a new event to endpoint `endpointId` of `tenantId`, created at `createdAt`. */
export function buildDelivery(
  tenantId: string,
  endpointId: string,
  createdAt: string,
  over: Partial<WebhookDelivery> = {},
): WebhookDelivery {
  return {
    id: newId('whd'),
    tenant_id: tenantId,
    endpoint_id: endpointId,
    event_id: newId('evt'),
    event_type: 'MANDATE_CREATED',
    payload: '{"type":"MANDATE_CREATED"}',
    status: 'PENDING',
    attempts: [],
    scheduled_attempts: 0,
    next_attempt_at: createdAt,
    created_at: createdAt,
    updated_at: createdAt,
    ...over,
  };
}
