import { MANDATE_STATES, type MandateState } from '../src/domain/mandate';
import { TransitionNotAllowed } from '../src/domain/errors';
import {
  LIFECYCLE_OPERATIONS,
  TRANSITIONS,
  nextState,
  type LifecycleOperation,
} from '../src/domain/state-machine';

/** Seed §3 plus SPEC §5's messages, written out pair by pair so the table cannot drift unnoticed. */
const EXPECTED: [MandateState, LifecycleOperation, { next: MandateState } | { conflict: string }][] = [
  ['ACTIVE', 'suspend', { next: 'SUSPENDED' }],
  ['ACTIVE', 'reactivate', { conflict: 'Mandate is not suspended' }],
  ['ACTIVE', 'revoke', { next: 'REVOKED' }],
  ['SUSPENDED', 'suspend', { conflict: 'Mandate is already suspended' }],
  ['SUSPENDED', 'reactivate', { next: 'ACTIVE' }],
  ['SUSPENDED', 'revoke', { next: 'REVOKED' }],
  ['REVOKED', 'suspend', { conflict: 'Mandate is revoked' }],
  ['REVOKED', 'reactivate', { conflict: 'Mandate is revoked' }],
  ['REVOKED', 'revoke', { conflict: 'Mandate is already revoked' }],
  ['EXPIRED', 'suspend', { conflict: 'Mandate is expired' }],
  ['EXPIRED', 'reactivate', { conflict: 'Mandate is expired' }],
  ['EXPIRED', 'revoke', { conflict: 'Mandate is expired' }],
];

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
  it('when the expectations are listed, then they cover every state × operation pair exactly once', () => {
    const pairs = EXPECTED.map(([s, op]) => `${s}:${op}`);
    expect(new Set(pairs).size).toBe(MANDATE_STATES.length * LIFECYCLE_OPERATIONS.length);
    expect(pairs.length).toBe(MANDATE_STATES.length * LIFECYCLE_OPERATIONS.length);
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
