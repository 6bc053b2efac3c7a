import type { AuditEvent } from '@mandate/shared/events';
import { credentialChangesOf } from '../contract/credential-changes';
import type { IdentityStore } from '../store/identity-store';
import type { ChangesSince } from './credential-change-store';

/** What these functions need of identity's dependencies (not the whole of common/deps.ts, which calls them). */
interface CredentialDeps {
  store: Pick<IdentityStore, 'credentialChanges'>;
  credentialFeed?: { changed(): void };
}

/**
 * Moves the epoch for the changes these stored events record, before the call that made them
 * returns, and tells the feeds: a gateway that missed the push sees them on its feed or next check. A failure fails the call
 * (its change is stored, and its event still reaches the gateways from the outbox).
 */
export async function recordCredentialChanges(deps: CredentialDeps, events: AuditEvent[]): Promise<void> {
  const changes = credentialChangesOf(events);
  if (changes.length === 0) return;
  await deps.store.credentialChanges.record(changes);
  deps.credentialFeed?.changed();
}

/** The gateway's safety-net check: the epoch, and what changed after `since`. */
export function credentialChangesSince(deps: CredentialDeps, since?: number): Promise<ChangesSince> {
  return deps.store.credentialChanges.since(since);
}
