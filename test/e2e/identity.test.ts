import { dashboardIssuers, startJwksServer, type JwksServer } from '../support/jwks-server';
import { apiClient, eventually, startStack, type Stack } from '../support/stack';

const AUDIENCE = 'mandate-api';

/**
 * Identity through the gateway, end to end: keys and their lifecycle, JWT callers with roles,
 * onboarding, widget config, and the audit events each step leaves (five processes, real
 * RabbitMQ and Redis, a JWT issuer on loopback).
 */
describe('identity end to end: keys, roles, JWT callers, onboarding, widget config', () => {
  let stack: Stack;
  let jwks: JwksServer;
  let api: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    jwks = await startJwksServer();
    stack = await startStack({
      gateway: {
        JWT_ISSUERS: dashboardIssuers(jwks, AUDIENCE),
      },
    });
    api = apiClient(stack.gateway.url);
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await jwks?.close();
  }, 30_000);

  const tenant = async (admin?: string) => {
    const res = await api('POST', '/v1/platform/tenants', {
      auth: stack.operatorToken,
      body: { name: 'Acme', plan: 'enterprise', ...(admin ? { admin_subject_id: admin } : {}) },
    });
    expect(res.status).toBe(201);
    return {
      tenantId: res.body.tenant.id as string,
      keyId: res.body.api_key.key_id as string,
      auth: `${res.body.tenant.id}:${res.body.api_key.api_key}`,
    };
  };
  const eventsOf = (auth: string, query: string) =>
    eventually(
      async () => {
        const res = await api('GET', `/v1/events?limit=100&${query}`, { auth });
        return res.status === 200 && res.body.data.length > 0
          ? (res.body.data as { type: string; actor: any; data: any; resource: any }[])
          : undefined;
      },
      15_000,
      `events ${query}`,
    );

  it('when a key walks create → use → rotate → activate → revoke, then statuses, last_used_at, 409 and 404 follow docs/API.md and no secret leaks', async () => {
    const { tenantId, auth } = await tenant();
    const keys = `/v1/tenants/${tenantId}/api-keys`;
    const created = await api('POST', keys, {
      auth,
      body: { name: 'ci', scopes: ['mandates:read', 'verify'] },
    });
    expect(created.status).toBe(201);
    expect(Object.keys(created.body).sort()).toEqual([
      'api_key',
      'created_at',
      'key_id',
      'name',
      'scopes',
      'status',
    ]);
    const secret: string = created.body.api_key;
    const key = `${tenantId}:${secret}`;

    expect((await api('GET', '/v1/mandates', { auth: key })).status).toBe(200);
    // X-Api-Key, with and without the tenant, is the same key.
    expect((await api('GET', '/v1/mandates', { headers: { 'x-api-key': secret } })).status).toBe(200);
    const read = await api('GET', `${keys}/${created.body.key_id}`, { auth });
    expect(read.body).toMatchObject({ status: 'active', last_used_at: expect.any(String) });
    const firstUse = read.body.last_used_at;
    // Written at most once a minute per key: more use within the minute leaves it alone.
    await api('GET', '/v1/mandates', { auth: key });
    expect((await api('GET', `${keys}/${created.body.key_id}`, { auth })).body.last_used_at).toBe(firstUse);

    const rotated = await api('POST', `${keys}/${created.body.key_id}/rotate`, { auth });
    expect(rotated).toMatchObject({
      status: 201,
      body: { status: 'staging', name: 'ci', scopes: ['mandates:read', 'verify'] },
    });
    const staging = `${tenantId}:${rotated.body.api_key}`;
    expect((await api('GET', '/v1/mandates', { auth: staging })).status).toBe(200);
    expect(
      (await api('POST', `${keys}/${rotated.body.key_id}/activate`, { auth, body: { grace_seconds: 0 } }))
        .body.status,
    ).toBe('active');
    expect((await api('GET', `${keys}/${created.body.key_id}`, { auth })).body.status).toBe('revoked');
    await eventually(
      async () => ((await api('GET', '/v1/mandates', { auth: key })).status === 401 ? true : undefined),
      2_000,
      'old key refused',
    );

    expect((await api('POST', `${keys}/${rotated.body.key_id}/revoke`, { auth })).body.status).toBe(
      'revoked',
    );
    expect(await api('POST', `${keys}/${rotated.body.key_id}/revoke`, { auth })).toMatchObject({
      status: 409,
      body: { error: 'CONFLICT', message: 'API key is already revoked' },
    });

    const list = await api('GET', keys, { auth });
    expect(list.body.data.map((k: { status: string }) => k.status)).toEqual(['revoked', 'revoked', 'active']);
    const types = (
      await eventsOf(auth, 'type=API_KEY_CREATED,API_KEY_ROTATED,API_KEY_ACTIVATED,API_KEY_REVOKED')
    ).map((e) => e.type);
    await eventually(
      async () => ((await eventsOf(auth, 'type=API_KEY_REVOKED')).length >= 2 ? true : undefined),
      15_000,
      'both revocations',
    );
    expect(types).toEqual(
      expect.arrayContaining(['API_KEY_CREATED', 'API_KEY_ROTATED', 'API_KEY_ACTIVATED']),
    );

    const everything = JSON.stringify({
      list: list.body,
      events: await eventsOf(auth, ''),
      logs: [stack.gateway, ...Object.values(stack.services)].map((p) => p.output.join('')),
    });
    for (const s of [secret, rotated.body.api_key]) expect(everything).not.toContain(s.slice(4));
  }, 60_000);

  it("when another tenant's key path is named, then 404; a second tenant's key cannot manage the first's keys", async () => {
    const a = await tenant();
    const b = await tenant();
    expect((await api('GET', `/v1/tenants/${a.tenantId}/api-keys`, { auth: b.auth })).status).toBe(404);
    expect(
      (await api('POST', `/v1/tenants/${b.tenantId}/api-keys/${a.keyId}/revoke`, { auth: b.auth })).status,
    ).toBe(404);
    expect((await api('GET', `/v1/tenants/${a.tenantId}`, { auth: a.auth })).body).toMatchObject({
      id: a.tenantId,
      plan: 'enterprise',
      status: 'active',
    });
  });

  it('when a JWT tenant admin manages roles, then assignments carry effective permissions, platform roles are 403, self-revocation is 409, and the events are audited', async () => {
    const { tenantId, auth } = await tenant('dashboard:e2e-admin');
    const admin = await jwks.sign({ sub: 'e2e-admin', aud: AUDIENCE });
    const base = `/v1/tenants/${tenantId}/role-assignments`;

    const created = await api('POST', base, {
      auth: admin,
      body: { subject_id: 'dashboard:e2e-viewer', roles: ['tenant_viewer'] },
    });
    expect(created).toMatchObject({
      status: 201,
      body: { permissions: ['mandates:read', 'tenant:read'], status: 'active' },
    });
    const assign = async (body: { subject_id: string; roles: string[] }) =>
      (await api('POST', base, { auth: admin, body })).status;
    expect(await assign({ subject_id: 'dashboard:e2e-viewer', roles: ['tenant_auditor'] })).toBe(409);
    expect(await assign({ subject_id: 'dashboard:x', roles: ['platform_admin'] })).toBe(403);

    // The viewer can read the tenant, not change roles.
    const viewer = await jwks.sign({ sub: 'e2e-viewer', aud: AUDIENCE });
    expect((await api('GET', `/v1/tenants/${tenantId}`, { auth: viewer })).status).toBe(200);
    expect(
      await api('POST', base, {
        auth: viewer,
        body: { subject_id: 'dashboard:y', roles: ['tenant_viewer'] },
      }),
    ).toMatchObject({
      status: 403,
      body: { message: 'Missing required permission: tenant:write' },
    });

    const patched = await api('PATCH', `${base}/${created.body.id}`, {
      auth: admin,
      body: { roles: ['tenant_operator'] },
    });
    expect(patched.body.permissions).toEqual(['events:read', 'mandates:read', 'mandates:write', 'verify']);

    const own = (await api('GET', `${base}?subject_id=dashboard:e2e-admin`, { auth: admin })).body.data[0];
    expect(await api('POST', `${base}/${own.id}/revoke`, { auth: admin })).toMatchObject({
      status: 409,
      body: { message: 'Cannot revoke your own active role assignment' },
    });
    expect((await api('POST', `${base}/${created.body.id}/revoke`, { auth: admin })).body.status).toBe(
      'revoked',
    );

    const events = await eventually(
      async () => {
        const found = await eventsOf(auth, `resource_id=${created.body.id}`);
        return found.length >= 3 ? found : undefined;
      },
      15_000,
      'role events',
    );
    expect(events.map((e) => e.type).sort()).toEqual([
      'TENANT_ROLE_ASSIGNED',
      'TENANT_ROLE_ASSIGNED',
      'TENANT_ROLE_REVOKED',
    ]);
    expect(events.every((e) => e.actor.type === 'user' && e.actor.subject_id === 'dashboard:e2e-admin')).toBe(
      true,
    );
  }, 60_000);

  it('when an organisation onboards, then the operator approves once (409 after), the admin subject can act, and the events are audited', async () => {
    const requested = await api('POST', '/v1/onboarding/request', {
      body: { organization_name: 'Umbrella', contact_email: 'it@umbrella.example.com', country: 'GB' },
    });
    expect(requested).toMatchObject({ status: 202, body: { status: 'PENDING' } });
    expect(
      (
        await api('POST', '/v1/onboarding/request', {
          body: { organization_name: 'X', contact_email: 'nope' },
        })
      ).status,
    ).toBe(400);

    const pending = await api('GET', '/v1/platform/onboarding-requests?status=PENDING', {
      auth: stack.operatorToken,
    });
    expect(pending.body.data.map((r: { id: string }) => r.id)).toContain(requested.body.id);

    const approve = `/v1/platform/onboarding-requests/${requested.body.id}/approve`;
    const approved = await api('POST', approve, {
      auth: stack.operatorToken,
      body: { admin_subject_id: 'dashboard:umbrella-admin' },
    });
    expect(approved).toMatchObject({
      status: 201,
      body: { onboarding_request: { status: 'APPROVED' }, tenant: { name: 'Umbrella' } },
    });
    expect((await api('POST', approve, { auth: stack.operatorToken })).status).toBe(409);

    const tenantId = approved.body.tenant.id;
    const adminToken = await jwks.sign({ sub: 'umbrella-admin', aud: AUDIENCE });
    expect((await api('GET', `/v1/tenants/${tenantId}`, { auth: adminToken })).status).toBe(200);
    const auth = `${tenantId}:${approved.body.api_key.api_key}`;
    const types = await eventually(
      async () => {
        const found = (await eventsOf(auth, '')).map((e) => e.type);
        return ['TENANT_CREATED', 'API_KEY_CREATED', 'TENANT_ROLE_ASSIGNED', 'ONBOARDING_APPROVED'].every(
          (t) => found.includes(t),
        )
          ? found
          : undefined;
      },
      15_000,
      'onboarding events',
    );
    expect(types).toContain('ONBOARDING_APPROVED');

    const other = await api('POST', '/v1/onboarding/request', {
      body: { organization_name: 'Spam', contact_email: 'a@spam.example.com' },
    });
    const rejected = await api('POST', `/v1/platform/onboarding-requests/${other.body.id}/reject`, {
      auth: stack.operatorToken,
      body: { reason: 'spam' },
    });
    expect(rejected.body).toMatchObject({ status: 'REJECTED', rejection_reason: 'spam' });
  }, 60_000);

  it('when the widget config is put, then only https origins are accepted and WIDGET_CONFIG_UPDATED is audited', async () => {
    const { tenantId, auth } = await tenant();
    const path = `/v1/tenants/${tenantId}/widget-config`;
    expect((await api('GET', path, { auth })).body).toEqual({
      allowed_origins: [],
      theme: {},
      locale: null,
      updated_at: null,
    });
    for (const bad of ['http://shop.example.com', 'https://*.example.com', 'https://shop.example.com/path']) {
      expect((await api('PUT', path, { auth, body: { allowed_origins: [bad] } })).status).toBe(400);
    }
    const put = await api('PUT', path, {
      auth,
      body: {
        allowed_origins: ['https://shop.example.com'],
        theme: { primary_color: '#112233' },
        locale: 'en',
      },
    });
    expect(put).toMatchObject({
      status: 200,
      body: { allowed_origins: ['https://shop.example.com'], locale: 'en' },
    });
    const events = await eventsOf(auth, 'type=WIDGET_CONFIG_UPDATED');
    expect(events[0]).toMatchObject({ resource: { type: 'widget_config', id: tenantId } });
  }, 30_000);

  it('when a JWT admin saves the access baseline, then it snapshots the access configuration, a viewer reads it but cannot save, ACCESS_BASELINE_SAVED is audited, and the changes since are in /v1/events', async () => {
    const { tenantId, keyId, auth } = await tenant('dashboard:drift-admin');
    const path = `/v1/tenants/${tenantId}/access-baseline`;
    const as = async (sub: string) => ({
      auth: await jwks.sign({ sub, aud: AUDIENCE }, { expiresIn: '10m' }),
      headers: { 'x-tenant-id': tenantId },
    });
    expect(
      (
        await api('POST', `/v1/tenants/${tenantId}/role-assignments`, {
          auth,
          body: { subject_id: 'dashboard:drift-viewer', roles: ['tenant_viewer'] },
        })
      ).status,
    ).toBe(201);
    const admin = await as('drift-admin');
    const viewer = await as('drift-viewer');
    expect((await api('GET', path, viewer)).body).toEqual({
      tenant_id: tenantId,
      saved_at: null,
      saved_by: null,
      snapshot: null,
    });

    const saved = await api('PUT', path, admin);
    expect(saved).toMatchObject({
      status: 200,
      body: {
        saved_by: { type: 'user', subject_id: 'dashboard:drift-admin' },
        snapshot: { api_keys: [{ key_id: keyId, status: 'active' }], widget_allowed_origins: [] },
      },
    });
    expect(saved.body.snapshot.role_assignments).toHaveLength(2);
    expect((await api('GET', path, viewer)).body).toEqual(saved.body);
    expect(await api('PUT', path, viewer)).toMatchObject({ status: 403, body: { error: 'FORBIDDEN' } });
    expect((await api('GET', path, admin)).body).toEqual(saved.body);

    const audited = await eventsOf(auth, 'type=ACCESS_BASELINE_SAVED');
    expect(audited[0]).toMatchObject({
      resource: { type: 'access_baseline', id: tenantId },
      actor: { type: 'user', subject_id: 'dashboard:drift-admin' },
      data: { saved_at: saved.body.saved_at, api_keys: 1, role_assignments: 2, widget_allowed_origins: 0 },
    });
    const key = await api('POST', `/v1/tenants/${tenantId}/api-keys`, {
      auth,
      body: { name: 'after the baseline', scopes: ['verify'] },
    });
    expect(key.status).toBe(201);
    const since = await eventsOf(
      auth,
      `since=${encodeURIComponent(saved.body.saved_at)}&type=API_KEY_CREATED,TENANT_ROLE_ASSIGNED,TENANT_ROLE_REVOKED`,
    );
    expect(since.map((e) => e.resource.id)).toEqual([key.body.key_id]);
  }, 60_000);
});
