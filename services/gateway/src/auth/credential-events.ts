import { CREDENTIAL_CHANGE_EVENT_TYPES, credentialChangesOf } from '@mandate/identity';
import type { AuditEvent, EventHandler } from '@mandate/shared/events';
import { isCredentialCache } from './credential-epoch';
import type { KeyResolver } from './key-resolver';
import type { SubjectResolver } from './subject-resolver';
import type { UsableKeys } from './usable-keys';

/** The events after which a cached credential may be wrong (identity's list); the gateway subscribes to exactly these. */
export const CREDENTIAL_EVENT_TYPES = CREDENTIAL_CHANGE_EVENT_TYPES;

/**
 * The push (docs/DECISIONS.md, "Credential changes"): evicts what an event changed, so a
 * revocation takes effect on every replica as soon as the event arrives. The credential epoch
 * check (credential-epoch.ts) catches what a replica missed.
 */
export function credentialEventHandler(
  keys: KeyResolver,
  subjects?: SubjectResolver,
  usableKeys?: UsableKeys,
): EventHandler {
  return async (event: AuditEvent) => {
    for (const change of credentialChangesOf([event])) {
      usableKeys?.drop([change]);
      if (change.kind === 'api_key') keys.evict(change.id!);
      else if (change.kind === 'subject') subjects?.evict(change.tenant_id, change.id!);
      else for (const cache of [keys, subjects]) if (isCredentialCache(cache)) cache.drop([change]);
    }
  };
}
