import { newId } from '@mandate/shared/core';
import type { Mandate } from '../src/domain/mandate';

export const NOW = new Date('2026-06-01T12:00:00.000Z');

type MandateOverrides = Partial<Omit<Mandate, 'scope'>> & { scope?: Partial<Mandate['scope']> };

/** A mandate as the mandates service serves it: ACTIVE, payments:* on any resource, no limits. */
export function buildMandate(overrides: MandateOverrides = {}): Mandate {
  const { scope, ...rest } = overrides;
  return {
    id: newId('mdt'),
    tenant_id: newId('tnt'),
    principal: { id: 'user_alice', type: 'person', name: 'Alice' },
    delegate: { id: 'agent_bob', type: 'agent' },
    scope: { actions: ['payments:*'], ...scope },
    state: 'ACTIVE',
    valid_from: null,
    expires_at: '2027-01-01T00:00:00.000Z',
    metadata: {},
    version: 1,
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
    signature: { alg: 'ES256', kid: 'key_test', jws: 'x.y.z' },
    ...rest,
  };
}
