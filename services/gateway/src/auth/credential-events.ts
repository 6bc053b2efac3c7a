import type { AuditEvent, EventHandler } from '@mandate/shared';
import type { KeyResolver } from './key-resolver';
import type { SubjectResolver } from './subject-resolver';

/** The events after which a cached credential may be wrong; the gateway subscribes to exactly these. */
export const CREDENTIAL_EVENT_TYPES = [
  'API_KEY_REVOKED',
  'API_KEY_ACTIVATED',
  'TENANT_ROLE_ASSIGNED',
  'TENANT_ROLE_REVOKED',
] as const;

/**
 * Evicts what an event invalidates, so a revocation takes effect on every replica as soon as
 * the event arrives instead of when the cache entry expires.
 */
export function credentialEventHandler(keys: KeyResolver, subjects?: SubjectResolver): EventHandler {
  return async (event: AuditEvent) => {
    switch (event.type) {
      case 'API_KEY_REVOKED':
      case 'API_KEY_ACTIVATED':
        if (event.resource?.id) keys.evict(event.resource.id);
        return;
      case 'TENANT_ROLE_ASSIGNED':
      case 'TENANT_ROLE_REVOKED': {
        const subjectId = event.data.subject_id;
        if (subjects && event.tenant_id && typeof subjectId === 'string')
          subjects.evict(event.tenant_id, subjectId);
        return;
      }
      default:
        return;
    }
  };
}
