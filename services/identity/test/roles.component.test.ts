import { newId } from '@mandate/shared/core';
import { callerFor } from '@mandate/shared/testing';
import { revokeRoleAssignment, updateRoleAssignment } from '../src/role-assignments/role-assignments';
import { expectOneOfRacingRevocations, identityStoreAdapters, identityForSuite, system } from './helpers';

describe.each(identityStoreAdapters())('identity: role assignments (component, $name store)', (adapter) => {
  const svc = identityForSuite({}, adapter);

  /** A tenant whose admin subject calls as a JWT user would, after the gateway checked tenant:write. */
  async function tenantWithAdmin() {
    const admin = `dashboard:${newId('req')}`;
    const t = await svc.createTenant({ admin_subject_id: admin });
    const caller = callerFor(t.tenantId, {
      actor: { type: 'user', subject_id: admin },
      permissions: ['tenant:read', 'tenant:write', 'tenants:admin'],
    });
    const base = `/v1/tenants/${t.tenantId}/role-assignments`;
    const list = await svc.call('GET', base, { caller });
    return { ...t, admin, caller, base, adminAssignmentId: list.body.data[0].id as string };
  }

  it('when roles are assigned, then 201 answers the assignment with the stored effective permissions and TENANT_ROLE_ASSIGNED is emitted', async () => {
    const { caller, base, tenantId } = await tenantWithAdmin();
    const res = await svc.call('POST', base, {
      caller,
      body: { subject_id: 'oidc:workforce:bob', roles: ['tenant_viewer', 'tenant_auditor'] },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^ras_[0-9a-z]{26}$/),
      tenant_id: tenantId,
      subject_id: 'oidc:workforce:bob',
      roles: ['tenant_viewer', 'tenant_auditor'],
      permissions: ['events:read', 'mandates:read', 'tenant:read'],
      status: 'active',
      created_at: expect.any(String),
      updated_at: res.body.created_at,
    });
    const event = svc.publisher.forTenant(tenantId).find((e) => e.resource?.id === res.body.id);
    expect(event).toMatchObject({
      type: 'TENANT_ROLE_ASSIGNED',
      actor: { type: 'user', subject_id: caller.actor.subject_id },
      data: {
        subject_id: 'oidc:workforce:bob',
        permissions: ['events:read', 'mandates:read', 'tenant:read'],
      },
    });
  });

  it('when the subject already has an active assignment, then 409', async () => {
    const { caller, base } = await tenantWithAdmin();
    const body = { subject_id: 'wallet:did:example:123', roles: ['tenant_viewer'] };
    expect((await svc.call('POST', base, { caller, body })).status).toBe(201);
    expect(
      await svc.call('POST', base, { caller, body: { ...body, roles: ['tenant_admin'] } }),
    ).toMatchObject({
      status: 409,
      body: { error: 'CONFLICT', message: 'Subject already has an active role assignment in this tenant' },
    });
  });

  it.each([
    ['platform_admin', ['platform_admin']],
    ['a platform:* permission', ['tenant_viewer', 'platform:tenants:write']],
  ])('when %s is assigned, then 403 and nothing is stored', async (_label, roles) => {
    const { caller, base } = await tenantWithAdmin();
    const res = await svc.call('POST', base, { caller, body: { subject_id: 'dashboard:eve', roles } });
    expect(res).toMatchObject({ status: 403, body: { error: 'FORBIDDEN' } });
    expect(res.body.message).toMatch(/^Role cannot be assigned through the tenant API: platform/);
    expect((await svc.call('GET', `${base}?subject_id=dashboard:eve`, { caller })).body.data).toEqual([]);
  });

  it.each([
    [
      'an unknown role',
      { subject_id: 'dashboard:x', roles: ['owner'] },
      /^roles\.0 must be one of: tenant_admin/,
    ],
    ['no roles', { subject_id: 'dashboard:x', roles: [] }, /^roles must have at least 1 item/],
    [
      'a subject without a scheme',
      { subject_id: 'alice', roles: ['tenant_viewer'] },
      /^subject_id: must be wallet/,
    ],
    [
      'an oidc subject without provider',
      { subject_id: 'oidc:alice', roles: ['tenant_viewer'] },
      /^subject_id: must be/,
    ],
    [
      'an unknown field',
      { subject_id: 'dashboard:x', roles: ['tenant_viewer'], permissions: ['x'] },
      /^permissions is not allowed$/,
    ],
  ])('when the body has %s, then 400 naming the field', async (_label, body, message) => {
    const { caller, base } = await tenantWithAdmin();
    const res = await svc.call('POST', base, { caller, body });
    expect(res).toMatchObject({ status: 400, body: { error: 'BAD_REQUEST' } });
    expect(res.body.message).toMatch(message);
  });

  it('when an assignment is read, listed, filtered and paged, then the tenant sees only its own, newest first', async () => {
    const { caller, base, adminAssignmentId } = await tenantWithAdmin();
    const other = await tenantWithAdmin();
    const ids = [adminAssignmentId];
    for (const s of ['a', 'b', 'c'])
      ids.push(
        (
          await svc.call('POST', base, {
            caller,
            body: { subject_id: `dashboard:${s}`, roles: ['tenant_viewer'] },
          })
        ).body.id,
      );
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { data: { id: string }[]; next_cursor: string | null } } = await svc.call(
        'GET',
        `${base}?limit=3${cursor ? `&cursor=${cursor}` : ''}`,
        { caller },
      );
      seen.push(...page.body.data.map((a) => a.id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
    expect((await svc.call('GET', `${base}/${ids[1]}`, { caller })).body).toMatchObject({
      id: ids[1],
      subject_id: 'dashboard:a',
    });
    expect((await svc.call('GET', `${base}?subject_id=dashboard:b`, { caller })).body.data).toHaveLength(1);
    // Another tenant's assignment, through the caller's own path and through the other tenant's path.
    expect(await svc.call('GET', `${base}/${other.adminAssignmentId}`, { caller })).toMatchObject({
      status: 404,
    });
    expect(await svc.call('GET', `${other.base}/${ids[1]}`, { caller })).toMatchObject({ status: 404 });
  });

  it('when roles are patched, then permissions follow and TENANT_ROLE_ASSIGNED records the previous roles', async () => {
    const { caller, base, tenantId } = await tenantWithAdmin();
    const created = await svc.call('POST', base, {
      caller,
      body: { subject_id: 'dashboard:p', roles: ['tenant_viewer'] },
    });
    const res = await svc.call('PATCH', `${base}/${created.body.id}`, {
      caller,
      body: { roles: ['tenant_operator'] },
    });
    expect(res).toMatchObject({
      status: 200,
      body: {
        roles: ['tenant_operator'],
        permissions: ['events:read', 'mandates:read', 'mandates:write', 'verify'],
      },
    });
    const events = svc.publisher.forTenant(tenantId).filter((e) => e.resource?.id === created.body.id);
    expect(events.map((e) => e.type)).toEqual(['TENANT_ROLE_ASSIGNED', 'TENANT_ROLE_ASSIGNED']);
    expect(events[1]!.data).toMatchObject({ previous_roles: ['tenant_viewer'], roles: ['tenant_operator'] });
    expect(
      await svc.call('PATCH', `${base}/${created.body.id}`, { caller, body: { roles: ['platform_admin'] } }),
    ).toMatchObject({ status: 403 });
    expect(
      await svc.call('PATCH', `${base}/${created.body.id}`, {
        caller,
        body: { roles: ['tenant_viewer'], subject_id: 'dashboard:q' },
      }),
    ).toMatchObject({
      status: 400,
      body: { message: 'subject_id cannot be changed; revoke and assign instead' },
    });
  });

  it('when an assignment is revoked, then 200 revoked, TENANT_ROLE_REVOKED, the subject no longer resolves, a second revoke and a patch are 409', async () => {
    const { caller, base, tenantId } = await tenantWithAdmin();
    const created = await svc.call('POST', base, {
      caller,
      body: { subject_id: 'dashboard:r', roles: ['tenant_viewer'] },
    });
    const res = await svc.call('POST', `${base}/${created.body.id}/revoke`, { caller });
    expect(res).toMatchObject({ status: 200, body: { id: created.body.id, status: 'revoked' } });
    expect(svc.publisher.forTenant(tenantId).at(-1)).toMatchObject({
      type: 'TENANT_ROLE_REVOKED',
      resource: { type: 'role_assignment', id: created.body.id },
    });
    expect(
      await svc.call('POST', '/internal/v1/subjects/resolve', {
        caller: system,
        body: { tenant_id: tenantId, subject_id: 'dashboard:r' },
      }),
    ).toMatchObject({ status: 404 });
    expect(await svc.call('POST', `${base}/${created.body.id}/revoke`, { caller })).toMatchObject({
      status: 409,
      body: { message: 'Role assignment is already revoked' },
    });
    expect(
      await svc.call('PATCH', `${base}/${created.body.id}`, { caller, body: { roles: ['tenant_admin'] } }),
    ).toMatchObject({ status: 409, body: { message: 'Role assignment is revoked' } });
    // Revoked: the subject may be assigned again.
    expect(
      (
        await svc.call('POST', base, {
          caller,
          body: { subject_id: 'dashboard:r', roles: ['tenant_auditor'] },
        })
      ).status,
    ).toBe(201);
  });

  it('when many revokes of one assignment race, then exactly one succeeds, the rest are 409, and one TENANT_ROLE_REVOKED is recorded', async () => {
    const { caller, base, tenantId } = await tenantWithAdmin();
    const created = await svc.call('POST', base, {
      caller,
      body: { subject_id: 'dashboard:racing', roles: ['tenant_viewer'] },
    });
    await expectOneOfRacingRevocations(
      svc,
      () => revokeRoleAssignment(svc.deps, tenantId, created.body.id, caller),
      {
        tenantId,
        resourceId: created.body.id,
        eventType: 'TENANT_ROLE_REVOKED',
        alreadyRevoked: 'Role assignment is already revoked',
      },
    );
  });

  it('when patches of one assignment race, then each lands on the roles it read: the events chain from the first roles to the stored ones', async () => {
    const { caller, base, tenantId } = await tenantWithAdmin();
    const created = await svc.call('POST', base, {
      caller,
      body: { subject_id: 'dashboard:patched', roles: ['tenant_viewer'] },
    });
    const targets = [['tenant_operator'], ['tenant_auditor'], ['tenant_admin']];
    // Called directly, so the reads and writes of the racers interleave on either store.
    await Promise.all(
      targets.map((roles) => updateRoleAssignment(svc.deps, tenantId, created.body.id, { roles }, caller)),
    );
    const changes = svc.publisher
      .forTenant(tenantId)
      .filter((e) => e.type === 'TENANT_ROLE_ASSIGNED' && e.resource?.id === created.body.id)
      .slice(1)
      .map((e) => e.data as { previous_roles: string[]; roles: string[] });
    expect(changes).toHaveLength(3);
    // Follow previous_roles → roles from the first roles: every change is visited once, ending at what is stored.
    let roles = ['tenant_viewer'];
    const left = [...changes];
    while (left.length > 0) {
      const next = left.findIndex((c) => c.previous_roles.join() === roles.join());
      expect(next).toBeGreaterThanOrEqual(0);
      roles = left.splice(next, 1)[0]!.roles;
    }
    expect((await svc.call('GET', `${base}/${created.body.id}`, { caller })).body.roles).toEqual(roles);
  });

  it('when a change that made an admin has not counted it yet, then demoting that admin again waits for the count instead of answering 409', async () => {
    const { caller, base, tenantId } = await tenantWithAdmin();
    const created = await svc.call('POST', base, {
      caller,
      body: { subject_id: 'dashboard:promoted', roles: ['tenant_viewer'] },
    });
    const store = svc.deps.store.roleAssignments as { joinAdmin(tenantId: string): Promise<void> };
    const joinAdmin = store.joinAdmin;
    let reached!: () => void;
    let release!: () => void;
    const promotionWritten = new Promise<void>((resolve) => (reached = resolve));
    const countHeld = new Promise<void>((resolve) => (release = resolve));
    // The promotion's write has landed; its count is held back, as a slow process would.
    store.joinAdmin = async function (this: unknown, id: string) {
      reached();
      await countHeld;
      return joinAdmin.call(this, id);
    };
    try {
      const id = created.body.id as string;
      const promoting = updateRoleAssignment(svc.deps, tenantId, id, { roles: ['tenant_admin'] }, caller);
      await promotionWritten;
      const demoting = updateRoleAssignment(svc.deps, tenantId, id, { roles: ['tenant_operator'] }, caller);
      setTimeout(release, 20);
      await promoting;
      expect((await demoting).roles).toEqual(['tenant_operator']);
    } finally {
      store.joinAdmin = joinAdmin;
    }
  });

  describe('a tenant always keeps an administrator', () => {
    const keyCaller = (tenantId: string) =>
      callerFor(tenantId, { actor: { type: 'api_key', key_id: newId('key') } });
    const LAST_ADMIN =
      'Cannot revoke or downgrade the last active tenant_admin assignment: assign another first';

    it.each([
      ['revoked', (base: string, id: string) => ['POST', `${base}/${id}/revoke`, undefined] as const],
      [
        'downgraded',
        (base: string, id: string) => ['PATCH', `${base}/${id}`, { roles: ['tenant_viewer'] }] as const,
      ],
    ])('when the last active tenant_admin is %s, then 409 and it stays an admin', async (_label, request) => {
      const { base, adminAssignmentId, tenantId } = await tenantWithAdmin();
      const [method, path, body] = request(base, adminAssignmentId);
      const caller = keyCaller(tenantId);
      expect(await svc.call(method, path, { caller, body })).toMatchObject({
        status: 409,
        body: { error: 'CONFLICT', message: LAST_ADMIN },
      });
      expect((await svc.call('GET', `${base}/${adminAssignmentId}`, { caller })).body).toMatchObject({
        status: 'active',
        roles: ['tenant_admin'],
      });
    });

    it('when two admins revoke each other at once, then exactly one wins and one admin remains', async () => {
      const { base, adminAssignmentId, tenantId, admin, caller } = await tenantWithAdmin();
      const second = `dashboard:${newId('req')}`;
      const created = await svc.call('POST', base, {
        caller,
        body: { subject_id: second, roles: ['tenant_admin'] },
      });
      expect(created.status).toBe(201);
      const as = (subject: string) =>
        callerFor(tenantId, {
          actor: { type: 'user', subject_id: subject },
          permissions: caller.permissions,
        });
      // Called directly, so the reads and writes of the two interleave on either store.
      const results = await Promise.allSettled([
        revokeRoleAssignment(svc.deps, tenantId, created.body.id, as(admin)),
        revokeRoleAssignment(svc.deps, tenantId, adminAssignmentId, as(second)),
      ]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      expect(refused.reason).toMatchObject({ status: 409, message: LAST_ADMIN });
      const active = await svc.call('GET', `${base}?status=active`, { caller: keyCaller(tenantId) });
      expect(
        active.body.data.filter((a: { roles: string[] }) => a.roles.includes('tenant_admin')),
      ).toHaveLength(1);
    });

    it('when revocations and downgrades of every admin race, then exactly one admin remains, and it can then act again', async () => {
      const { base, adminAssignmentId, tenantId, caller } = await tenantWithAdmin();
      const ids = [adminAssignmentId];
      for (let i = 0; i < 3; i++) {
        const created = await svc.call('POST', base, {
          caller,
          body: { subject_id: `dashboard:${newId('req')}`, roles: ['tenant_admin'] },
        });
        ids.push(created.body.id);
      }
      const key = keyCaller(tenantId);
      const results = await Promise.allSettled(
        ids.map((id, i) =>
          i % 2
            ? revokeRoleAssignment(svc.deps, tenantId, id, key)
            : updateRoleAssignment(svc.deps, tenantId, id, { roles: ['tenant_auditor'] }, key),
        ),
      );
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
      const active = await svc.call('GET', `${base}?status=active`, { caller: key });
      const admins = active.body.data.filter((a: { roles: string[] }) => a.roles.includes('tenant_admin'));
      expect(admins).toHaveLength(1);
      // The count followed: a new admin lets the remaining one go.
      await svc.call('POST', base, {
        caller: key,
        body: { subject_id: `dashboard:${newId('req')}`, roles: ['tenant_admin'] },
      });
      expect((await svc.call('POST', `${base}/${admins[0].id}/revoke`, { caller: key })).status).toBe(200);
    });
  });

  it('when the caller revokes its own active assignment, then 409 and it stays active', async () => {
    const { caller, base, adminAssignmentId } = await tenantWithAdmin();
    // A second admin, so the last-admin rule is not what refuses or allows here.
    await svc.call('POST', base, {
      caller,
      body: { subject_id: `dashboard:${newId('req')}`, roles: ['tenant_admin'] },
    });
    expect(await svc.call('POST', `${base}/${adminAssignmentId}/revoke`, { caller })).toMatchObject({
      status: 409,
      body: { error: 'CONFLICT', message: 'Cannot revoke your own active role assignment' },
    });
    expect((await svc.call('GET', `${base}/${adminAssignmentId}`, { caller })).body.status).toBe('active');
    // Another credential of the tenant (an API key) may revoke it.
    const keyCaller = callerFor(caller.tenantId, { actor: { type: 'api_key', key_id: newId('key') } });
    expect(
      (await svc.call('POST', `${base}/${adminAssignmentId}/revoke`, { caller: keyCaller })).status,
    ).toBe(200);
  });

  it('when the caller patches its own active assignment to drop tenant:write, then 409 and its roles stay', async () => {
    const { caller, base, adminAssignmentId } = await tenantWithAdmin();
    await svc.call('POST', base, {
      caller,
      body: { subject_id: `dashboard:${newId('req')}`, roles: ['tenant_admin'] },
    });
    expect(
      await svc.call('PATCH', `${base}/${adminAssignmentId}`, { caller, body: { roles: ['tenant_viewer'] } }),
    ).toMatchObject({
      status: 409,
      body: { error: 'CONFLICT', message: 'Cannot downgrade your own active role assignment' },
    });
    expect((await svc.call('GET', `${base}/${adminAssignmentId}`, { caller })).body.roles).toEqual([
      'tenant_admin',
    ]);
    // Keeping tenant:write is no downgrade; another credential of the tenant may downgrade it.
    expect(
      (
        await svc.call('PATCH', `${base}/${adminAssignmentId}`, {
          caller,
          body: { roles: ['tenant_admin', 'tenant_auditor'] },
        })
      ).status,
    ).toBe(200);
    const keyCaller = callerFor(caller.tenantId, { actor: { type: 'api_key', key_id: newId('key') } });
    expect(
      (
        await svc.call('PATCH', `${base}/${adminAssignmentId}`, {
          caller: keyCaller,
          body: { roles: ['tenant_viewer'] },
        })
      ).status,
    ).toBe(200);
  });

  it('when the subject resolves, then the gateway gets its permissions and the tenant plan', async () => {
    const { admin, tenantId } = await tenantWithAdmin();
    expect(
      await svc.call('POST', '/internal/v1/subjects/resolve', {
        caller: system,
        body: { tenant_id: tenantId, subject_id: admin },
      }),
    ).toMatchObject({
      status: 200,
      body: { tenant_id: tenantId, subject_id: admin, roles: ['tenant_admin'], plan: 'beta' },
    });
  });

  it('when many subjects are resolved at once, then each result stands in its place: the assignment as the single lookup answers it, null without one', async () => {
    const { admin, tenantId } = await tenantWithAdmin();
    const single = await svc.call('POST', '/internal/v1/subjects/resolve', {
      caller: system,
      body: { tenant_id: tenantId, subject_id: admin },
    });
    const res = await svc.call('POST', '/internal/v1/subjects/resolve-many', {
      caller: system,
      body: {
        items: [
          { tenant_id: tenantId, subject_id: 'dashboard:nobody' },
          { tenant_id: tenantId, subject_id: admin },
          { tenant_id: 'ten_missing', subject_id: admin },
        ],
      },
    });
    expect(res).toMatchObject({ status: 200 });
    expect(res.body.results).toEqual([null, single.body, null]);
  });
});
