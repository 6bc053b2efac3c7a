import { eventDataOrNull, type AuditEvent } from '@mandate/shared/events';

/**
 * One change that may make a credential the gateway holds wrong: an API key's status (revoke,
 * rotate, activate), a JWT subject's role assignment in a tenant, or a whole tenant (everything
 * of it). Never a secret: the gateway finds its cached answers by these ids.
 */
export interface CredentialChange {
  kind: 'api_key' | 'subject' | 'tenant';
  tenant_id: string;
  /** The key id (api_key) or subject id (subject); absent for a tenant. */
  id?: string;
}

function keyChange(e: AuditEvent): CredentialChange | null {
  return e.tenant_id && e.resource?.id
    ? { kind: 'api_key', tenant_id: e.tenant_id, id: e.resource.id }
    : null;
}

/** The subject whose role assignment changed, read by the event type's data schema. */
const subjectChange =
  (type: 'TENANT_ROLE_ASSIGNED' | 'TENANT_ROLE_REVOKED') =>
  (e: AuditEvent): CredentialChange | null => {
    const data = eventDataOrNull(type, e.data);
    return e.tenant_id && data ? { kind: 'subject', tenant_id: e.tenant_id, id: data.subject_id } : null;
  };

/**
 * The events after which a credential the gateway holds may be wrong, and what each changed
 * (docs/DECISIONS.md, "Credential changes"); data is read by its type's schema, an event off it
 * changes nothing here. Identity moves the credential epoch for them before
 * the call returns; the gateway receives the same events over RabbitMQ (the push) and drops what
 * they changed at once. A tenant-wide change (kind `tenant`) drops every credential of the tenant.
 */
const CHANGE_OF: Record<string, (e: AuditEvent) => CredentialChange | null> = {
  API_KEY_REVOKED: keyChange,
  API_KEY_ACTIVATED: keyChange,
  // The key rotated stays active; its cached answer is dropped anyway, so no gateway keeps an
  // answer from before the rotation.
  API_KEY_ROTATED: (e) => {
    const replaced = eventDataOrNull('API_KEY_ROTATED', e.data)?.replaces_key_id;
    return e.tenant_id && replaced ? { kind: 'api_key', tenant_id: e.tenant_id, id: replaced } : null;
  },
  TENANT_ROLE_ASSIGNED: subjectChange('TENANT_ROLE_ASSIGNED'),
  TENANT_ROLE_REVOKED: subjectChange('TENANT_ROLE_REVOKED'),
};

/** The event types that record a credential change: what the gateway subscribes to. */
export const CREDENTIAL_CHANGE_EVENT_TYPES = Object.keys(CHANGE_OF) as readonly string[];

/** The credential changes these events record (none for most). */
export function credentialChangesOf(events: AuditEvent[]): CredentialChange[] {
  return events.flatMap((e) => CHANGE_OF[e.type]?.(e) ?? []);
}
