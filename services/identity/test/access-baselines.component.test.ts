import { callerFor } from '@mandate/shared/testing';
import { identityStoreAdapters, identityForSuite } from './helpers';

describe.each(identityStoreAdapters())('identity: access baselines (component, $name store)', (adapter) => {
  const svc = identityForSuite({}, adapter);

  async function tenant() {
    const t = await svc.createTenant({ admin_subject_id: 'dashboard:drift-admin' });
    const caller = callerFor(t.tenantId, { actor: { type: 'api_key', key_id: t.keyId } });
    const base = `/v1/tenants/${t.tenantId}`;
    return { ...t, caller, base, path: `${base}/access-baseline` };
  }

  const none = (tenantId: string) => ({
    tenant_id: tenantId,
    saved_at: null,
    saved_by: null,
    snapshot: null,
  });

  it('when nothing was saved, then GET answers 200 with a null baseline', async () => {
    const { caller, path, tenantId } = await tenant();
    expect(await svc.call('GET', path, { caller })).toMatchObject({ status: 200, body: none(tenantId) });
  });

  it('when a baseline is saved, then it snapshots keys, assignments and origins, reads back, and ACCESS_BASELINE_SAVED is emitted', async () => {
    const { tenantId, keyId, caller, base, path } = await tenant();
    await svc.call('PUT', `${base}/widget-config`, {
      caller,
      body: { allowed_origins: ['https://shop.example.com'] },
    });
    const put = await svc.call('PUT', path, { caller });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({
      tenant_id: tenantId,
      saved_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      saved_by: { type: 'api_key', key_id: keyId },
      snapshot: {
        api_keys: [
          {
            key_id: keyId,
            name: 'Initial key',
            scopes: ['mandates:read', 'mandates:write', 'verify', 'events:read', 'tenants:admin'],
            status: 'active',
          },
        ],
        role_assignments: [
          {
            id: expect.stringMatching(/^ras_/),
            subject_id: 'dashboard:drift-admin',
            roles: ['tenant_admin'],
            status: 'active',
          },
        ],
        widget_allowed_origins: ['https://shop.example.com'],
        truncated: false,
      },
    });
    expect(JSON.stringify(put.body)).not.toMatch(/msk_|secret_hash/);
    expect((await svc.call('GET', path, { caller })).body).toEqual(put.body);
    expect(svc.publisher.forTenant(tenantId).at(-1)).toMatchObject({
      type: 'ACCESS_BASELINE_SAVED',
      resource: { type: 'access_baseline', id: tenantId },
      actor: { type: 'api_key', key_id: keyId },
      data: { saved_at: put.body.saved_at, api_keys: 1, role_assignments: 1, widget_allowed_origins: 1 },
    });
  });

  it('when a baseline is saved again after changes, then it replaces the previous one; the old state is gone', async () => {
    const { caller, base, path } = await tenant();
    const first = await svc.call('PUT', path, { caller });
    const created = await svc.call('POST', `${base}/api-keys`, {
      caller,
      body: { name: 'ci', scopes: ['verify'] },
    });
    expect(created.status).toBe(201);
    const second = await svc.call('PUT', path, { caller, body: {} });
    expect(second.status).toBe(200);
    expect(Date.parse(second.body.saved_at)).toBeGreaterThanOrEqual(Date.parse(first.body.saved_at));
    expect(second.body.snapshot.api_keys.map((k: { key_id: string }) => k.key_id)).toEqual([
      created.body.key_id,
      first.body.snapshot.api_keys[0].key_id,
    ]);
    expect((await svc.call('GET', path, { caller })).body).toEqual(second.body);
  });

  it('when a signed-in subject saves it, then saved_by names the subject', async () => {
    const { tenantId, path } = await tenant();
    const admin = callerFor(tenantId, {
      actor: { type: 'user', subject_id: 'dashboard:drift-admin' },
      permissions: ['tenant:read', 'tenant:write'],
    });
    const put = await svc.call('PUT', path, { caller: admin });
    expect(put.body.saved_by).toEqual({ type: 'user', subject_id: 'dashboard:drift-admin' });
  });

  it.each([
    ['an unknown field', { note: 'x' }],
    ['a snapshot of its own', { snapshot: { api_keys: [] } }],
    ['an array', []],
  ])('when the body has %s, then 400 and nothing is saved', async (_label, body) => {
    const { caller, path, tenantId } = await tenant();
    const before = svc.publisher.forTenant(tenantId).length;
    const res = await svc.call('PUT', path, { caller, body });
    expect(res).toMatchObject({ status: 400, body: { error: 'BAD_REQUEST', message: expect.any(String) } });
    expect((await svc.call('GET', path, { caller })).body).toEqual(none(tenantId));
    expect(svc.publisher.forTenant(tenantId).length).toBe(before);
  });

  it("when another tenant reads or saves this tenant's baseline, then 404 and nothing changes", async () => {
    const a = await tenant();
    const b = await tenant();
    const saved = await svc.call('PUT', a.path, { caller: a.caller });
    expect(await svc.call('GET', a.path, { caller: b.caller })).toMatchObject({
      status: 404,
      body: { error: 'NOT_FOUND' },
    });
    expect((await svc.call('PUT', a.path, { caller: b.caller })).status).toBe(404);
    expect((await svc.call('GET', a.path, { caller: a.caller })).body).toEqual(saved.body);
    expect((await svc.call('GET', b.path, { caller: b.caller })).body).toEqual(none(b.tenantId));
  });

  it('when two saves race, then each answers 200 or 409 and the stored baseline is one of the answered ones', async () => {
    const { caller, path } = await tenant();
    const answers = await Promise.all([1, 2, 3, 4].map(() => svc.call('PUT', path, { caller })));
    for (const a of answers) expect([200, 409]).toContain(a.status);
    const stored = (await svc.call('GET', path, { caller })).body;
    expect(answers.filter((a) => a.status === 200).map((a) => a.body)).toContainEqual(stored);
  });
});
