import { buildEvent, type EventInput } from '@mandate/shared/events';

// Run by test/contracts/event-contract.test.ts, under the repository's jest setup: a producer
// whose data is off its schema (a cast hides it from the compiler, as `as EventInput<T>` in a
// generic producer would), and one whose data holds.
const revoked = (data: Record<string, unknown>) =>
  buildEvent({
    type: 'MANDATE_REVOKED',
    tenantId: 'tnt_01jdqv8k3mzq4y6t2n9c0w5hxr',
    resource: { type: 'mandate', id: 'mdt_01jdqv8k3mzq4y6t2n9c0w5hxr' },
    data,
  } as EventInput<'MANDATE_REVOKED'>);

it('off schema', () => {
  revoked({ previous_state: 'ACTIVE', state: 'REVOKED', version: '2' });
});

it('on schema', () => {
  revoked({ previous_state: 'ACTIVE', state: 'REVOKED', version: 2 });
});
