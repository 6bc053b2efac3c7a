import { newId } from '@mandate/shared/core';
import { generateSecret, hashSecret, type ApiKeyRecord } from '../src/api-keys/api-key';
import type { OnboardingRequest } from '../src/onboarding/onboarding';
import { permissionsOf, type RoleAssignment } from '../src/role-assignments/roles';
import type { Tenant } from '../src/tenants/tenant';

const now = () => new Date().toISOString();

export function buildTenant(overrides: Partial<Tenant> = {}): Tenant {
  return { id: newId('tnt'), name: 'Acme', plan: 'beta', status: 'active', created_at: now(), ...overrides };
}

export function buildKeyRecord(
  tenantId: string,
  overrides: Partial<ApiKeyRecord> = {},
): ApiKeyRecord & { secret: string } {
  const secret = generateSecret();
  return {
    key_id: newId('key'),
    tenant_id: tenantId,
    name: 'ci',
    scopes: ['mandates:read'],
    status: 'active',
    created_at: now(),
    last_used_at: null,
    replaces_key_id: null,
    replaced_by_key_id: null,
    grace_ends_at: null,
    secret_hash: hashSecret(secret),
    secret,
    ...overrides,
  };
}

export function buildAssignment(tenantId: string, overrides: Partial<RoleAssignment> = {}): RoleAssignment {
  return {
    id: newId('ras'),
    tenant_id: tenantId,
    subject_id: `dashboard:${newId('req')}`,
    roles: ['tenant_viewer'],
    permissions: permissionsOf(['tenant_viewer']),
    status: 'active',
    created_at: now(),
    updated_at: now(),
    ...overrides,
  };
}

export function buildOnboardingRequest(overrides: Partial<OnboardingRequest> = {}): OnboardingRequest {
  return {
    id: newId('onb'),
    organization_name: 'Globex',
    contact_email: 'ops@globex.example.com',
    country: null,
    use_case: null,
    status: 'PENDING',
    created_at: now(),
    decided_at: null,
    tenant_id: null,
    rejection_reason: null,
    ...overrides,
  };
}

/** The stored record without the test-only secret field. */
export function recordOf(built: ApiKeyRecord & { secret: string }): ApiKeyRecord {
  const { secret: _secret, ...record } = built;
  return record;
}
