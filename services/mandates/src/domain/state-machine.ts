import type { EventType } from '@mandate/shared/events';
import { TransitionNotAllowed } from './errors';
import type { MandateState } from './mandate';

export const LIFECYCLE_OPERATIONS = ['suspend', 'reactivate', 'revoke'] as const;
export type LifecycleOperation = (typeof LIFECYCLE_OPERATIONS)[number];

type Outcome = { next: MandateState } | { conflict: string };

/** A terminal state: every operation is refused, with why. */
function terminal(why: string): Record<LifecycleOperation, Outcome> {
  const refused = LIFECYCLE_OPERATIONS.map((operation) => [operation, { conflict: why }]);
  return Object.fromEntries(refused) as Record<LifecycleOperation, Outcome>;
}

/**
 * The whole lifecycle (seed §3): every state × operation pair is either a next state or the 409
 * message naming why not. REVOKED and EXPIRED are terminal.
 */
export const TRANSITIONS: Record<MandateState, Record<LifecycleOperation, Outcome>> = {
  ACTIVE: {
    suspend: { next: 'SUSPENDED' },
    reactivate: { conflict: 'Mandate is not suspended' },
    revoke: { next: 'REVOKED' },
  },
  SUSPENDED: {
    suspend: { conflict: 'Mandate is already suspended' },
    reactivate: { next: 'ACTIVE' },
    revoke: { next: 'REVOKED' },
  },
  REVOKED: { ...terminal('Mandate is revoked'), revoke: { conflict: 'Mandate is already revoked' } },
  EXPIRED: terminal('Mandate is expired'),
};

export const OPERATION_EVENT = {
  suspend: 'MANDATE_SUSPENDED',
  reactivate: 'MANDATE_REACTIVATED',
  revoke: 'MANDATE_REVOKED',
} as const satisfies Record<LifecycleOperation, EventType>;

/** The next state, or TransitionNotAllowed (409) with the table's message. */
export function nextState(current: MandateState, operation: LifecycleOperation): MandateState {
  const outcome = TRANSITIONS[current][operation];
  if ('conflict' in outcome) throw new TransitionNotAllowed(outcome.conflict);
  return outcome.next;
}
