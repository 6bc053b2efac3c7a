import { buildOpenApiDocument } from '@mandate/shared/contract';
import { SECRET_PATTERN, generateSecret, hashSecret, hashesEqual } from '../src/api-keys/api-key';
import { contract } from '../src/contract';
import { decided } from '../src/onboarding/onboarding';
import { isSubjectId, permissionsOf, revoked, withRoles } from '../src/role-assignments/roles';
import { buildAssignment, buildOnboardingRequest } from './factories';

describe('API key secrets', () => {
  it('when secrets are generated, then each has the prefix, 43 base62 characters and is unique', () => {
    const secrets = Array.from({ length: 500 }, generateSecret);
    expect(secrets.every((s) => SECRET_PATTERN.test(s))).toBe(true);
    expect(new Set(secrets).size).toBe(secrets.length);
  });

  it('when many secrets are generated, then every base62 character shows up (no biased alphabet)', () => {
    const chars = new Set(Array.from({ length: 200 }, generateSecret).flatMap((s) => [...s.slice(4)]));
    expect(chars.size).toBe(62);
  });

  it('when hashes are compared, then only equal SHA-256 digests match', () => {
    const a = hashSecret('msk_a');
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(hashesEqual(a, hashSecret('msk_a'))).toBe(true);
    expect(hashesEqual(a, hashSecret('msk_b'))).toBe(false);
    expect(hashesEqual(a, 'abcd')).toBe(false);
  });
});

describe('roles', () => {
  it('when roles are combined, then the permissions are the sorted union of docs/API.md, "Scopes, permissions and roles"', () => {
    expect(permissionsOf(['tenant_viewer', 'tenant_auditor'])).toEqual([
      'events:read',
      'mandates:read',
      'tenant:read',
    ]);
  });

  it.each([
    ['wallet:0xabc', true],
    ['wallet:did:pkh:eip155:1:0xabc', true],
    ['dashboard:user-1', true],
    ['oidc:workforce:alice', true],
    ['oidc:alice', false],
    ['github:alice', false],
    ['wallet:', false],
    ['dashboard:a b', false],
  ])('when the subject is %s, then valid is %s', (subject, valid) => {
    expect(isSubjectId(subject)).toBe(valid);
  });
});

describe('role assignment changes (decided before the guarded write)', () => {
  const at = '2026-01-02T00:00:00.000Z';
  const admin = buildAssignment('tnt_a', {
    roles: ['tenant_admin'],
    permissions: permissionsOf(['tenant_admin']),
  });

  it('when roles are replaced, then only roles, permissions and updated_at change', () => {
    expect(withRoles(admin, ['tenant_auditor'], at, {})).toEqual({
      ...admin,
      roles: ['tenant_auditor'],
      permissions: permissionsOf(['tenant_auditor']),
      updated_at: at,
    });
  });

  it('when the caller drops tenant:write from its own active assignment, or the subject would change, or it is revoked, then it is refused', () => {
    const own = { callerSubjectId: admin.subject_id };
    expect(() => withRoles(admin, ['tenant_viewer'], at, own)).toThrow(
      'Cannot downgrade your own active role assignment',
    );
    expect(withRoles(admin, ['tenant_admin', 'tenant_viewer'], at, own).status).toBe('active');
    expect(() => withRoles(admin, ['tenant_viewer'], at, { subjectId: 'dashboard:other' })).toThrow(
      'subject_id cannot be changed; revoke and assign instead',
    );
    expect(() => withRoles(revoked(admin, at), ['tenant_viewer'], at, {})).toThrow(
      'Role assignment is revoked',
    );
  });

  it('when an assignment is revoked, then only status and updated_at change, never twice nor by its own subject', () => {
    expect(revoked(admin, at)).toEqual({ ...admin, status: 'revoked', updated_at: at });
    expect(() => revoked(revoked(admin, at), at)).toThrow('Role assignment is already revoked');
    expect(() => revoked(admin, at, admin.subject_id)).toThrow(
      'Cannot revoke your own active role assignment',
    );
  });
});

describe('onboarding decisions', () => {
  it('when a request is approved or rejected, then only the decision fields change', () => {
    const pending = buildOnboardingRequest({ country: 'DE' });
    const at = '2026-01-02T00:00:00.000Z';
    expect(decided(pending, { status: 'APPROVED', at, tenantId: 'tnt_new' })).toEqual({
      ...pending,
      status: 'APPROVED',
      decided_at: at,
      tenant_id: 'tnt_new',
    });
    expect(decided(pending, { status: 'REJECTED', at, reason: 'spam' })).toEqual({
      ...pending,
      status: 'REJECTED',
      decided_at: at,
      rejection_reason: 'spam',
    });
    expect(decided(pending, { status: 'REJECTED', at }).rejection_reason).toBeNull();
  });
});

describe('OpenAPI contribution', () => {
  it('when the document is built, then every public identity path is in it under /v1', () => {
    const doc = buildOpenApiDocument(contract);
    expect(Object.keys(doc.paths ?? {}).sort()).toEqual([
      '/v1/identity-verifications',
      '/v1/identity-verifications/sign-in',
      '/v1/identity-verifications/{id}',
      '/v1/identity-verifications/{id}/poll',
      '/v1/identity-verifications/{id}/request',
      '/v1/identity-verifications/{id}/response',
      '/v1/identity-verifications/{id}/token',
      '/v1/onboarding/request',
      '/v1/platform/onboarding-requests',
      '/v1/platform/onboarding-requests/{id}/approve',
      '/v1/platform/onboarding-requests/{id}/reject',
      '/v1/platform/tenants',
      '/v1/tenants/{tenantId}',
      '/v1/tenants/{tenantId}/access-baseline',
      '/v1/tenants/{tenantId}/api-keys',
      '/v1/tenants/{tenantId}/api-keys/{keyId}',
      '/v1/tenants/{tenantId}/api-keys/{keyId}/activate',
      '/v1/tenants/{tenantId}/api-keys/{keyId}/revoke',
      '/v1/tenants/{tenantId}/api-keys/{keyId}/rotate',
      '/v1/tenants/{tenantId}/role-assignments',
      '/v1/tenants/{tenantId}/role-assignments/{id}',
      '/v1/tenants/{tenantId}/role-assignments/{id}/revoke',
      '/v1/tenants/{tenantId}/widget-config',
      '/v1/wallet/jwks',
    ]);
  });
});
