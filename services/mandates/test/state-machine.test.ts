import { MANDATE_STATES, type MandateState } from '../src/domain/mandate';
import { TransitionNotAllowed } from '../src/domain/errors';
import {
  LIFECYCLE_OPERATIONS,
  TRANSITIONS,
  nextState,
  type LifecycleOperation,
} from '../src/domain/state-machine';

type Expected = { next: MandateState } | { conflict: string };
const next = (state: MandateState): Expected => ({ next: state });
const conflict = (message: string): Expected => ({ conflict: message });

/**
 * The lifecycle and messages of docs/API.md, "Mandates", written out as a matrix so the table cannot drift unnoticed: its
 * type makes the compiler require every state × operation pair.
 */
const MATRIX: Record<MandateState, Record<LifecycleOperation, Expected>> = {
  ACTIVE: {
    suspend: next('SUSPENDED'),
    reactivate: conflict('Mandate is not suspended'),
    revoke: next('REVOKED'),
  },
  SUSPENDED: {
    suspend: conflict('Mandate is already suspended'),
    reactivate: next('ACTIVE'),
    revoke: next('REVOKED'),
  },
  REVOKED: {
    suspend: conflict('Mandate is revoked'),
    reactivate: conflict('Mandate is revoked'),
    revoke: conflict('Mandate is already revoked'),
  },
  EXPIRED: {
    suspend: conflict('Mandate is expired'),
    reactivate: conflict('Mandate is expired'),
    revoke: conflict('Mandate is expired'),
  },
};
const EXPECTED = MANDATE_STATES.flatMap((state) =>
  LIFECYCLE_OPERATIONS.map((operation) => [state, operation, MATRIX[state][operation]] as const),
);

/** What nextState does: the state it leads to, or the refusal it throws (its status and envelope). */
function outcomeOf(state: MandateState, operation: LifecycleOperation): unknown {
  try {
    return { next: nextState(state, operation) };
  } catch (err) {
    return err instanceof TransitionNotAllowed
      ? { status: err.status, envelope: err.toEnvelope() }
      : { unexpected: err };
  }
}

describe('mandate state machine', () => {
  it('when the machine is asked, then its table has exactly the states and operations the matrix lists', () => {
    expect(Object.keys(TRANSITIONS).sort()).toEqual([...MANDATE_STATES].sort());
    for (const state of MANDATE_STATES)
      expect(Object.keys(TRANSITIONS[state]).sort()).toEqual([...LIFECYCLE_OPERATIONS].sort());
  });

  it.each(EXPECTED)('when %s receives %s, then the outcome is %j', (state, operation, expected) => {
    expect(TRANSITIONS[state][operation]).toEqual(expected);
    expect(outcomeOf(state, operation)).toEqual(
      'next' in expected
        ? { next: expected.next }
        : { status: 409, envelope: { error: 'CONFLICT', message: expected.conflict } },
    );
  });

  it('when a state is terminal, then no operation leads out of it', () => {
    for (const state of ['REVOKED', 'EXPIRED'] as const) {
      for (const op of LIFECYCLE_OPERATIONS) expect('next' in TRANSITIONS[state][op]).toBe(false);
    }
  });
});
