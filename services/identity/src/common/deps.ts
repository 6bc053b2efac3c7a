import { type CallerContext, type Clock } from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import {
  buildEvent,
  type AuditEvent,
  type EventInput,
  type EventRelay,
  type EventType,
} from '@mandate/shared/events';
import { recordCredentialChanges } from '../credential-changes/credential-changes';
import type { WalletVerifier } from '../identity-verifications/identity-verification';
import type { IdentityStore } from '../store/identity-store';

/** What identity's use cases need; each is a function over these, the caller passed per call. */
export interface IdentityDeps {
  store: IdentityStore;
  clock: Clock;
  /** Publishes the events each write stored with it; absent → they wait in the outbox for a relay. */
  relay?: EventRelay;
  /** How long a rotation's staging key may wait for activation (STAGING_KEY_TTL_HOURS); default 168 h. */
  stagingKeyTtlMs?: number;
  /** How long a replaced key keeps working after an activation that names no grace (KEY_ROTATION_GRACE_SECONDS); default 24 h. */
  rotationGraceSeconds?: number;
  /** The OpenID4VP verifier (key, public URL, trust list); absent → identity verification answers 503. */
  wallet?: WalletVerifier;
  /** Told of each credential change recorded here, to write it to the gateways' feeds at once. */
  credentialFeed?: { changed(): void };
  /** For what a use case logs (a failed wallet answer's reason); never a claim value. */
  logger?: Logger;
}

/** What a change records, its data typed by its type; the caller and the time are added by `recordedEvent`. */
export type DomainEvent<T extends EventType = EventType> = T extends EventType
  ? Omit<EventInput<T>, 'caller' | 'occurredAt'>
  : never;

/** A guarded write that lost to a concurrent one re-reads and decides again; this bounds how often. */
export const MAX_WRITE_ATTEMPTS = 5;

export const nowIso = (deps: Pick<IdentityDeps, 'clock'>): string => deps.clock.now().toISOString();

/** The complete event of a change, built before the write that stores it (the outbox). */
export function recordedEvent(deps: IdentityDeps, e: DomainEvent, caller?: CallerContext): AuditEvent {
  return buildEvent({ ...e, caller, occurredAt: deps.clock.now() });
}

/**
 * After the write: move the credential epoch for a credential change (the gateways' safety net),
 * then hand its stored events to the relay (if that fails they wait in the outbox).
 */
export async function relay(deps: IdentityDeps, events: AuditEvent[]): Promise<void> {
  await recordCredentialChanges(deps, events);
  if (events.length > 0) await deps.relay?.publishNow(events);
}
