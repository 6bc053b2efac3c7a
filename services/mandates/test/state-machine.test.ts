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

describe('mandate state machine', () => {
  it('when the expectations are listed, then they cover every state × operation pair exactly once', () => {
    const pairs = EXPECTED.map(([s, op]) => `${s}:${op}`);
    expect(new Set(pairs).size).toBe(MANDATE_STATES.length * LIFECYCLE_OPERATIONS.length);
    expect(pairs.length).toBe(MANDATE_STATES.length * LIFECYCLE_OPERATIONS.length);
  });

  it.each(EXPECTED)('when %s receives %s, then the outcome is %j', (state, operation, expected) => {
    expect(TRANSITIONS[state][operation]).toEqual(expected);
    if ('next' in expected) {
      expect(nextState(state, operation)).toBe(expected.next);
    } else {
      let thrown: unknown;
      try {
        nextState(state, operation);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(TransitionNotAllowed);
      expect((thrown as TransitionNotAllowed).toEnvelope()).toEqual({
        error: 'CONFLICT',
        message: expected.conflict,
      });
      expect((thrown as TransitionNotAllowed).status).toBe(409);
    }
  });

  it('when a state is terminal, then no operation leads out of it', () => {
    for (const state of ['REVOKED', 'EXPIRED'] as const) {
      for (const op of LIFECYCLE_OPERATIONS) expect('next' in TRANSITIONS[state][op]).toBe(false);
    }
  });
});
