import { buildEvent, newId, type AuditEvent, type EventInput } from '@mandate/shared';

/** A valid event for `tenantId`; every field can be overridden. Ids are monotonic, so later = newer. */
export function buildAuditEvent(
  tenantId: string | null,
  overrides: Partial<EventInput> & { keyId?: string } = {},
): AuditEvent {
  const { keyId, ...input } = overrides;
  return buildEvent({
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
