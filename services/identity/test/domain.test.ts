import { buildOpenApiDocument } from '@mandate/shared';
import { SECRET_PATTERN, generateSecret, hashSecret, hashesEqual } from '../src/domain/api-key';
import { isSubjectId, permissionsOf } from '../src/domain/roles';
import { openApi } from '../src/http/schemas';

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
  it('when roles are combined, then the permissions are the sorted union of SPEC §4', () => {
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

describe('OpenAPI contribution', () => {
  it('when the document is built, then every public identity path is in it under /v1', () => {
    const doc = buildOpenApiDocument([openApi]);
    expect(Object.keys(doc.paths ?? {}).sort()).toEqual([
      '/v1/onboarding/request',
      '/v1/platform/onboarding-requests',
      '/v1/platform/onboarding-requests/{id}/approve',
      '/v1/platform/onboarding-requests/{id}/reject',
      '/v1/platform/tenants',
      '/v1/tenants/{tenantId}',
      '/v1/tenants/{tenantId}/api-keys',
      '/v1/tenants/{tenantId}/api-keys/{keyId}',
      '/v1/tenants/{tenantId}/api-keys/{keyId}/activate',
      '/v1/tenants/{tenantId}/api-keys/{keyId}/revoke',
      '/v1/tenants/{tenantId}/api-keys/{keyId}/rotate',
      '/v1/tenants/{tenantId}/role-assignments',
      '/v1/tenants/{tenantId}/role-assignments/{id}',
      '/v1/tenants/{tenantId}/role-assignments/{id}/revoke',
      '/v1/tenants/{tenantId}/widget-config',
    ]);
  });
});
