import { accessDiff, type AccessSnapshot } from '../../packages/dashboard/src/drift';

/** The drift page's comparison of the current access configuration with a baseline's snapshot. */
const snapshot = (over: Partial<AccessSnapshot> = {}): AccessSnapshot => ({
  api_keys: [
    { key_id: 'key_02', name: 'ci', scopes: ['verify'], status: 'active' },
    { key_id: 'key_01', name: 'Initial key', scopes: ['tenants:admin', 'verify'], status: 'active' },
  ],
  role_assignments: [
    { id: 'ras_02', subject_id: 'dashboard:bob', roles: ['tenant_viewer'], status: 'active' },
    { id: 'ras_01', subject_id: 'dashboard:alice', roles: ['tenant_admin'], status: 'active' },
  ],
  widget_allowed_origins: ['https://shop.example.com'],
  truncated: false,
  ...over,
});

describe('drift monitoring: current configuration against the baseline', () => {
  it('when nothing changed (scopes and roles in another order too), then there is no difference', () => {
    const now = snapshot();
    now.api_keys[1]!.scopes = ['verify', 'tenants:admin'];
    expect(accessDiff(snapshot(), now)).toEqual([]);
  });

  it('when a key is added, revoked and re-scoped, an assignment revoked and re-roled, and origins changed, then each is one difference', () => {
    const now = snapshot({
      api_keys: [
        { key_id: 'key_03', name: 'new', scopes: ['mandates:read'], status: 'active' },
        { key_id: 'key_02', name: 'ci', scopes: ['verify', 'events:read'], status: 'revoked' },
        { key_id: 'key_01', name: 'Initial key', scopes: ['tenants:admin', 'verify'], status: 'active' },
      ],
      role_assignments: [
        { id: 'ras_03', subject_id: 'dashboard:carol', roles: ['tenant_auditor'], status: 'active' },
        { id: 'ras_02', subject_id: 'dashboard:bob', roles: ['tenant_viewer'], status: 'revoked' },
        { id: 'ras_01', subject_id: 'dashboard:alice', roles: ['tenant_operator'], status: 'active' },
      ],
      widget_allowed_origins: ['https://app.example.com'],
    });
    expect(accessDiff(snapshot(), now)).toEqual([
      { kind: 'API key', change: 'added', what: 'new (key_03)', detail: 'active; scopes mandates:read' },
      {
        kind: 'API key',
        change: 'changed',
        what: 'ci (key_02)',
        detail: 'status active → revoked; scopes verify → events:read, verify',
      },
      {
        kind: 'Role assignment',
        change: 'added',
        what: 'dashboard:carol',
        detail: 'active; roles tenant_auditor',
      },
      {
        kind: 'Role assignment',
        change: 'changed',
        what: 'dashboard:bob',
        detail: 'status active → revoked',
      },
      {
        kind: 'Role assignment',
        change: 'changed',
        what: 'dashboard:alice',
        detail: 'roles tenant_admin → tenant_operator',
      },
      { kind: 'Widget origin', change: 'added', what: 'https://app.example.com', detail: 'allowed' },
      {
        kind: 'Widget origin',
        change: 'removed',
        what: 'https://shop.example.com',
        detail: 'no longer allowed',
      },
    ]);
  });

  it('when an entry of the baseline is missing now, then it is removed', () => {
    const now = snapshot();
    now.api_keys.shift();
    expect(accessDiff(snapshot(), now)).toEqual([
      { kind: 'API key', change: 'removed', what: 'ci (key_02)', detail: 'was active' },
    ]);
  });

  it('when the baseline was truncated, then entries older than its oldest are not reported as added', () => {
    const baseline = snapshot({
      api_keys: [{ key_id: 'key_02', name: 'ci', scopes: ['verify'], status: 'active' }],
      truncated: true,
    });
    expect(accessDiff(baseline, snapshot())).toEqual([]);
  });

  it('when the current lists were truncated, then baseline entries older than their oldest are not reported as removed', () => {
    const now = snapshot({
      api_keys: [{ key_id: 'key_02', name: 'ci', scopes: ['verify'], status: 'active' }],
      truncated: true,
    });
    expect(accessDiff(snapshot(), now)).toEqual([]);
  });
});
