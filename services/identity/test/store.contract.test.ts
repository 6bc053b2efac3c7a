import { buildEvent, newId, type AuditEvent } from '@mandate/shared';
import { describeStoreContract } from '@mandate/shared/src/testing';
import { DuplicateRecord, DuplicateRoleAssignment, PendingSuccessorExists } from '../src/domain/errors';
import type { IdentityStore } from '../src/store/identity-store';
import { buildAssignment, buildKeyRecord, buildOnboardingRequest, buildTenant, recordOf } from './factories';
import { identityStoreAdapters } from './helpers';

describeStoreContract<IdentityStore>('IdentityStore', identityStoreAdapters(), (getStore) => {
  describe('tenants', () => {
    it('when a tenant is inserted, then it is read back as the same plain object', async () => {
      const tenant = buildTenant({ plan: 'enterprise' });
      await getStore().insertTenant(tenant);
      expect(await getStore().getTenant(tenant.id)).toEqual(tenant);
    });

    it('when a tenant id is unknown, then get answers null', async () => {
      expect(await getStore().getTenant(newId('tnt'))).toBeNull();
    });

    it('when the same tenant id is inserted twice, then the second is a conflict', async () => {
      const tenant = buildTenant();
      await getStore().insertTenant(tenant);
      await expect(getStore().insertTenant(tenant)).rejects.toBeInstanceOf(DuplicateRecord);
    });
  });

  describe('API keys', () => {
    it('when a key is inserted, then it resolves by its hash and reads without the hash', async () => {
      const tenantId = newId('tnt');
      const built = buildKeyRecord(tenantId, { scopes: ['verify', 'events:read'] });
      await getStore().insertApiKey(tenantId, recordOf(built));
      expect(await getStore().findApiKeyByHash(built.secret_hash)).toEqual(recordOf(built));
      const { secret_hash: _h, ...withoutHash } = recordOf(built);
      expect(await getStore().getApiKey(tenantId, built.key_id)).toEqual(withoutHash);
      const listed = await getStore().listApiKeys(tenantId, { limit: 10 });
      expect(listed).toEqual([withoutHash]);
      expect(JSON.stringify(listed)).not.toContain(built.secret_hash);
    });

    it('when another tenant asks for a key, then it is absent', async () => {
      const owner = newId('tnt');
      const other = newId('tnt');
      const built = buildKeyRecord(owner);
      await getStore().insertApiKey(owner, recordOf(built));
      expect(await getStore().getApiKey(other, built.key_id)).toBeNull();
      expect(await getStore().listApiKeys(other, { limit: 10 })).toEqual([]);
      expect(await getStore().updateApiKeyStatus(other, built.key_id, ['active'], 'revoked')).toBeNull();
      expect((await getStore().getApiKey(owner, built.key_id))?.status).toBe('active');
    });

    it('when two keys share a secret hash, then the second insert is a conflict', async () => {
      const first = buildKeyRecord(newId('tnt'));
      await getStore().insertApiKey(first.tenant_id, recordOf(first));
      const second = buildKeyRecord(newId('tnt'), { secret_hash: first.secret_hash });
      await expect(getStore().insertApiKey(second.tenant_id, recordOf(second))).rejects.toBeInstanceOf(
        DuplicateRecord,
      );
    });

    it('when a key already has a staging successor, then a second staging successor is refused until the first leaves staging', async () => {
      const tenantId = newId('tnt');
      const old = buildKeyRecord(tenantId);
      await getStore().insertApiKey(tenantId, recordOf(old));
      const successor = (over = {}) =>
        buildKeyRecord(tenantId, { status: 'staging', replaces_key_id: old.key_id, ...over });
      const first = successor();
      await getStore().insertApiKey(tenantId, recordOf(first));
      const second = successor();
      await expect(getStore().insertApiKey(tenantId, recordOf(second))).rejects.toBeInstanceOf(
        PendingSuccessorExists,
      );
      expect(await getStore().findApiKeyByHash(second.secret_hash)).toBeNull();
      // Concurrent inserts: the database lets exactly one through.
      await getStore().updateApiKeyStatus(tenantId, first.key_id, ['staging'], 'revoked');
      const racing = await Promise.allSettled(
        [successor(), successor(), successor()].map((r) => getStore().insertApiKey(tenantId, recordOf(r))),
      );
      expect(racing.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      // Another key's successor is not affected.
      const other = buildKeyRecord(tenantId);
      await getStore().insertApiKey(tenantId, recordOf(other));
      await getStore().insertApiKey(
        tenantId,
        recordOf(buildKeyRecord(tenantId, { status: 'staging', replaces_key_id: other.key_id })),
      );
    });

    it('when staging keys are listed by age, then only staging keys created at or before the cutoff come back, oldest first, across tenants', async () => {
      const cutoff = '2020-01-01T00:00:00.000Z';
      const tenantA = newId('tnt');
      const tenantB = newId('tnt');
      const due1 = buildKeyRecord(tenantA, { status: 'staging', created_at: '2019-12-31T00:00:00.000Z' });
      const due2 = buildKeyRecord(tenantB, { status: 'staging', created_at: cutoff });
      const young = buildKeyRecord(tenantA, { status: 'staging', created_at: '2020-01-01T00:00:00.001Z' });
      const active = buildKeyRecord(tenantA, { status: 'active', created_at: '2019-01-01T00:00:00.000Z' });
      for (const k of [due2, young, active, due1]) await getStore().insertApiKey(k.tenant_id, recordOf(k));
      const listed = await getStore().listStagingKeysCreatedBefore(cutoff, 100);
      const ours = listed.filter((k) => [tenantA, tenantB].includes(k.tenant_id)).map((k) => k.key_id);
      expect(ours).toEqual([due1.key_id, due2.key_id]);
      expect(listed.every((k) => !('secret_hash' in k))).toBe(true);
    });

    it('when an unknown hash is looked up, then it answers null', async () => {
      expect(await getStore().findApiKeyByHash('0'.repeat(64))).toBeNull();
    });

    it('when keys are listed, then they come newest first and page by the id cursor', async () => {
      const tenantId = newId('tnt');
      const built = [buildKeyRecord(tenantId), buildKeyRecord(tenantId), buildKeyRecord(tenantId)];
      for (const b of built) await getStore().insertApiKey(tenantId, recordOf(b));
      const ids = built.map((b) => b.key_id).reverse();
      const first = await getStore().listApiKeys(tenantId, { limit: 2 });
      expect(first.map((k) => k.key_id)).toEqual(ids.slice(0, 2));
      const rest = await getStore().listApiKeys(tenantId, { limit: 2, before: first[1]!.key_id });
      expect(rest.map((k) => k.key_id)).toEqual(ids.slice(2));
    });

    it('when a status update names the current status, then it applies; otherwise it answers null', async () => {
      const tenantId = newId('tnt');
      const built = buildKeyRecord(tenantId, { status: 'staging' });
      await getStore().insertApiKey(tenantId, recordOf(built));
      expect(await getStore().updateApiKeyStatus(tenantId, built.key_id, ['active'], 'revoked')).toBeNull();
      const activated = await getStore().updateApiKeyStatus(tenantId, built.key_id, ['staging'], 'active');
      expect(activated).toMatchObject({ key_id: built.key_id, status: 'active' });
      expect(activated).not.toHaveProperty('secret_hash');
      expect(
        await getStore().updateApiKeyStatus(tenantId, built.key_id, ['active', 'staging'], 'revoked'),
      ).toMatchObject({
        status: 'revoked',
      });
      expect(
        await getStore().updateApiKeyStatus(tenantId, built.key_id, ['active', 'staging'], 'revoked'),
      ).toBeNull();
      expect((await getStore().findApiKeyByHash(built.secret_hash))?.status).toBe('revoked');
    });

    it('when a key is touched, then last_used_at is set, and not rewritten within the interval', async () => {
      const tenantId = newId('tnt');
      const built = buildKeyRecord(tenantId);
      await getStore().insertApiKey(tenantId, recordOf(built));
      await getStore().touchApiKey(tenantId, built.key_id, '2026-01-01T00:00:00.000Z', 60_000);
      await getStore().touchApiKey(tenantId, built.key_id, '2026-01-01T00:00:30.000Z', 60_000);
      expect((await getStore().getApiKey(tenantId, built.key_id))?.last_used_at).toBe(
        '2026-01-01T00:00:00.000Z',
      );
      await getStore().touchApiKey(tenantId, built.key_id, '2026-01-01T00:01:00.000Z', 60_000);
      expect((await getStore().getApiKey(tenantId, built.key_id))?.last_used_at).toBe(
        '2026-01-01T00:01:00.000Z',
      );
    });
  });

  describe('role assignments', () => {
    it("when an assignment is inserted, then it is read back and found as the subject's active one", async () => {
      const tenantId = newId('tnt');
      const a = buildAssignment(tenantId);
      await getStore().insertRoleAssignment(tenantId, a);
      expect(await getStore().getRoleAssignment(tenantId, a.id)).toEqual(a);
      expect(await getStore().findActiveRoleAssignment(tenantId, a.subject_id)).toEqual(a);
      expect(await getStore().findActiveRoleAssignment(newId('tnt'), a.subject_id)).toBeNull();
      expect(await getStore().getRoleAssignment(newId('tnt'), a.id)).toBeNull();
    });

    it('when a subject already has an active assignment, then a second one is a conflict', async () => {
      const tenantId = newId('tnt');
      const a = buildAssignment(tenantId);
      await getStore().insertRoleAssignment(tenantId, a);
      await expect(
        getStore().insertRoleAssignment(tenantId, buildAssignment(tenantId, { subject_id: a.subject_id })),
      ).rejects.toBeInstanceOf(DuplicateRoleAssignment);
    });

    it('when the same subject is assigned in another tenant, then both assignments stand', async () => {
      const a = buildAssignment(newId('tnt'));
      const b = buildAssignment(newId('tnt'), { subject_id: a.subject_id });
      await getStore().insertRoleAssignment(a.tenant_id, a);
      await getStore().insertRoleAssignment(b.tenant_id, b);
      expect(await getStore().findActiveRoleAssignment(b.tenant_id, a.subject_id)).toEqual(b);
    });

    it('when the active assignment is revoked, then a new one for the subject is allowed', async () => {
      const tenantId = newId('tnt');
      const a = buildAssignment(tenantId);
      await getStore().insertRoleAssignment(tenantId, a);
      const revoked = await getStore().revokeRoleAssignment(tenantId, a.id, '2026-01-02T00:00:00.000Z');
      expect(revoked).toMatchObject({
        id: a.id,
        status: 'revoked',
        updated_at: '2026-01-02T00:00:00.000Z',
      });
      expect(await getStore().revokeRoleAssignment(tenantId, a.id, '2026-01-03T00:00:00.000Z')).toBeNull();
      expect(await getStore().findActiveRoleAssignment(tenantId, a.subject_id)).toBeNull();
      const next = buildAssignment(tenantId, { subject_id: a.subject_id, roles: ['tenant_admin'] });
      await getStore().insertRoleAssignment(tenantId, next);
      expect(await getStore().findActiveRoleAssignment(tenantId, a.subject_id)).toEqual(next);
    });

    it("when assignments are listed, then newest first, filtered, paged by id, and only the tenant's own", async () => {
      const tenantId = newId('tnt');
      const all = [buildAssignment(tenantId), buildAssignment(tenantId), buildAssignment(tenantId)];
      for (const a of all) await getStore().insertRoleAssignment(tenantId, a);
      await getStore().insertRoleAssignment(newId('tnt'), buildAssignment(newId('tnt')));
      await getStore().revokeRoleAssignment(tenantId, all[0]!.id, '2026-01-02T00:00:00.000Z');
      const ids = (xs: { id: string }[]) => xs.map((x) => x.id);
      expect(ids(await getStore().listRoleAssignments(tenantId, { limit: 10 }))).toEqual(
        ids([...all].reverse()),
      );
      expect(ids(await getStore().listRoleAssignments(tenantId, { limit: 1, before: all[2]!.id }))).toEqual([
        all[1]!.id,
      ]);
      expect(ids(await getStore().listRoleAssignments(tenantId, { limit: 10, status: 'revoked' }))).toEqual([
        all[0]!.id,
      ]);
      expect(
        ids(await getStore().listRoleAssignments(tenantId, { limit: 10, subjectId: all[1]!.subject_id })),
      ).toEqual([all[1]!.id]);
    });

    it("when one subject's assignments are filtered by subject, status and a cursor, then only the older matching ones come, newest first", async () => {
      const tenantId = newId('tnt');
      const subject = `dashboard:${newId('req')}`;
      const history: string[] = [];
      for (let i = 0; i < 4; i++) {
        const a = buildAssignment(tenantId, { subject_id: subject });
        await getStore().insertRoleAssignment(tenantId, a);
        history.push(a.id);
        if (i < 3) await getStore().revokeRoleAssignment(tenantId, a.id, '2026-01-02T00:00:00.000Z');
      }
      await getStore().insertRoleAssignment(tenantId, buildAssignment(tenantId));
      const list = (options: { status?: 'active' | 'revoked'; before?: string; limit?: number }) =>
        getStore()
          .listRoleAssignments(tenantId, { limit: 10, subjectId: subject, ...options })
          .then((xs) => xs.map((x) => x.id));
      expect(await list({ status: 'active' })).toEqual([history[3]]);
      expect(await list({ status: 'revoked' })).toEqual([history[2], history[1], history[0]]);
      expect(await list({ status: 'revoked', before: history[2], limit: 1 })).toEqual([history[1]]);
      expect(await list({ status: 'active', before: history[3] })).toEqual([]);
      expect((await getStore().findActiveRoleAssignment(tenantId, subject))?.id).toBe(history[3]);
    });

    it('when roles are updated, then only an active assignment changes', async () => {
      const tenantId = newId('tnt');
      const a = buildAssignment(tenantId);
      await getStore().insertRoleAssignment(tenantId, a);
      const change = {
        roles: ['tenant_auditor' as const],
        permissions: ['events:read'],
        at: '2026-01-02T00:00:00.000Z',
      };
      expect(await getStore().updateRoleAssignmentRoles(newId('tnt'), a.id, change)).toBeNull();
      expect(await getStore().updateRoleAssignmentRoles(tenantId, a.id, change)).toEqual({
        ...a,
        roles: ['tenant_auditor'],
        permissions: ['events:read'],
        updated_at: change.at,
      });
      await getStore().revokeRoleAssignment(tenantId, a.id, '2026-01-03T00:00:00.000Z');
      expect(await getStore().updateRoleAssignmentRoles(tenantId, a.id, change)).toBeNull();
    });
  });

  describe('onboarding requests', () => {
    it('when a request is inserted, then it reads back, lists by status and is decided exactly once', async () => {
      const r = buildOnboardingRequest({ country: 'DE' });
      await getStore().insertOnboardingRequest(r);
      await expect(getStore().insertOnboardingRequest(r)).rejects.toBeInstanceOf(DuplicateRecord);
      expect(await getStore().getOnboardingRequest(r.id)).toEqual(r);
      const pending = await getStore().listOnboardingRequests({ limit: 100, status: 'PENDING' });
      expect(pending.map((x) => x.id)).toContain(r.id);
      const tenantId = newId('tnt');
      const decided = await getStore().decideOnboardingRequest(r.id, {
        status: 'APPROVED',
        at: '2026-01-02T00:00:00.000Z',
        tenantId,
      });
      expect(decided).toEqual({
        ...r,
        status: 'APPROVED',
        decided_at: '2026-01-02T00:00:00.000Z',
        tenant_id: tenantId,
      });
      expect(
        await getStore().decideOnboardingRequest(r.id, {
          status: 'REJECTED',
          at: '2026-01-03T00:00:00.000Z',
        }),
      ).toBeNull();
      const approved = await getStore().listOnboardingRequests({ limit: 100, status: 'APPROVED' });
      expect(approved.map((x) => x.id)).toContain(r.id);
      expect(
        (await getStore().listOnboardingRequests({ limit: 100, status: 'PENDING' })).map((x) => x.id),
      ).not.toContain(r.id);
    });

    it('when requests are listed, then newest first and paged by id', async () => {
      const a = buildOnboardingRequest();
      const b = buildOnboardingRequest();
      await getStore().insertOnboardingRequest(a);
      await getStore().insertOnboardingRequest(b);
      const page = await getStore().listOnboardingRequests({ limit: 1, before: b.id });
      expect(page.map((x) => x.id)).toEqual([a.id]);
    });
  });

  describe('widget config', () => {
    it('when a configuration is put twice, then the second replaces the first, per tenant', async () => {
      const tenantId = newId('tnt');
      expect(await getStore().getWidgetConfig(tenantId)).toBeNull();
      const first = {
        allowed_origins: ['https://a.example.com'],
        theme: { primary_color: '#ffffff' },
        locale: 'en',
        updated_at: '2026-01-01T00:00:00.000Z',
      };
      await getStore().putWidgetConfig(tenantId, first);
      expect(await getStore().getWidgetConfig(tenantId)).toEqual(first);
      const second = {
        allowed_origins: [],
        theme: {},
        locale: null,
        updated_at: '2026-01-02T00:00:00.000Z',
      };
      await getStore().putWidgetConfig(tenantId, second);
      expect(await getStore().getWidgetConfig(tenantId)).toEqual(second);
      expect(await getStore().getWidgetConfig(newId('tnt'))).toBeNull();
    });
  });
  describe('outbox', () => {
    const event = (
      type: AuditEvent['type'],
      tenantId: string | null,
      id: string,
      data: Record<string, unknown> = {},
    ) => buildEvent({ type, tenantId, resource: { type: 'test', id }, data });
    /** The store is shared by the suite: look only at this test's events. */
    const pendingOf = async (ids: string[]) =>
      (await getStore().pendingEvents(10_000)).filter((e) => ids.includes(e.id));

    it('when inserts carry events, then each is pending with its record, never on a read, until marked sent', async () => {
      const tenant = buildTenant();
      const created = event('TENANT_CREATED', tenant.id, tenant.id);
      await getStore().insertTenant(tenant, [created]);
      const built = buildKeyRecord(tenant.id);
      const keyCreated = event('API_KEY_CREATED', tenant.id, built.key_id);
      await getStore().insertApiKey(tenant.id, recordOf(built), [keyCreated]);
      const assignment = buildAssignment(tenant.id);
      const assigned = event('TENANT_ROLE_ASSIGNED', tenant.id, assignment.id);
      await getStore().insertRoleAssignment(tenant.id, assignment, [assigned]);
      const widget = event('WIDGET_CONFIG_UPDATED', tenant.id, tenant.id);
      await getStore().putWidgetConfig(
        tenant.id,
        { allowed_origins: [], theme: {}, locale: null, updated_at: new Date().toISOString() },
        [widget],
      );
      const ids = [created.id, keyCreated.id, assigned.id, widget.id];
      expect((await pendingOf(ids)).map((e) => e.id).sort()).toEqual([...ids].sort());
      const reads = [
        await getStore().getTenant(tenant.id),
        await getStore().getApiKey(tenant.id, built.key_id),
        await getStore().findApiKeyByHash(built.secret_hash),
        await getStore().getRoleAssignment(tenant.id, assignment.id),
        await getStore().getWidgetConfig(tenant.id),
      ];
      for (const read of reads) expect(Object.keys(read!)).not.toContain('outbox');
      await getStore().markSent(ids);
      expect(await pendingOf(ids)).toEqual([]);
    });

    it('when a conditional update carries events, then they are built from the record as written and as it was, and a refused update stores none', async () => {
      const tenantId = newId('tnt');
      const built = buildKeyRecord(tenantId, { status: 'staging' });
      await getStore().insertApiKey(tenantId, recordOf(built));
      let seen: unknown[] = [];
      const activated = await getStore().updateApiKeyStatus(
        tenantId,
        built.key_id,
        ['staging'],
        'active',
        (written, previous) => {
          seen = [written.status, previous.status];
          return [event('API_KEY_ACTIVATED', tenantId, written.key_id, { status: written.status })];
        },
      );
      expect(activated?.status).toBe('active');
      expect(seen).toEqual(['active', 'staging']);
      const refused = await getStore().updateApiKeyStatus(
        tenantId,
        built.key_id,
        ['staging'],
        'active',
        (k) => [event('API_KEY_ACTIVATED', tenantId, k.key_id)],
      );
      expect(refused).toBeNull();
      const pending = (await getStore().pendingEvents(10_000)).filter((e) => e.resource?.id === built.key_id);
      expect(pending.map((e) => [e.type, e.data])).toEqual([['API_KEY_ACTIVATED', { status: 'active' }]]);
      await getStore().markSent(pending.map((e) => e.id));

      const assignment = buildAssignment(tenantId, { roles: ['tenant_viewer'] });
      await getStore().insertRoleAssignment(tenantId, assignment);
      await getStore().updateRoleAssignmentRoles(
        tenantId,
        assignment.id,
        { roles: ['tenant_operator'], permissions: ['mandates:read'], at: new Date().toISOString() },
        (written, previous) => [
          event('TENANT_ROLE_ASSIGNED', tenantId, written.id, {
            roles: written.roles,
            previous: previous.roles,
          }),
        ],
      );
      await getStore().revokeRoleAssignment(tenantId, assignment.id, new Date().toISOString(), (written) => [
        event('TENANT_ROLE_REVOKED', tenantId, written.id, { status: written.status }),
      ]);
      expect(
        await getStore().revokeRoleAssignment(tenantId, assignment.id, new Date().toISOString(), (w) => [
          event('TENANT_ROLE_REVOKED', tenantId, w.id),
        ]),
      ).toBeNull();
      const onAssignment = (await getStore().pendingEvents(10_000)).filter(
        (e) => e.resource?.id === assignment.id,
      );
      expect(onAssignment.map((e) => [e.type, e.data])).toEqual([
        ['TENANT_ROLE_ASSIGNED', { roles: ['tenant_operator'], previous: ['tenant_viewer'] }],
        ['TENANT_ROLE_REVOKED', { status: 'revoked' }],
      ]);
      await getStore().markSent(onAssignment.map((e) => e.id));
    });

    it('when an onboarding request is decided twice, then only the winning decision stores its event', async () => {
      const request = buildOnboardingRequest({ country: 'DE' });
      const requested = event('ONBOARDING_REQUESTED', null, request.id);
      await getStore().insertOnboardingRequest(request, [requested]);
      const decide = (status: 'APPROVED' | 'REJECTED') =>
        getStore().decideOnboardingRequest(request.id, { status, at: new Date().toISOString() }, (w) => [
          event(status === 'APPROVED' ? 'ONBOARDING_APPROVED' : 'ONBOARDING_REJECTED', null, w.id, {
            status: w.status,
          }),
        ]);
      const results = await Promise.all([decide('APPROVED'), decide('REJECTED')]);
      const winner = results.find((r) => r !== null)!;
      expect(results.filter((r) => r !== null)).toHaveLength(1);
      const pending = (await getStore().pendingEvents(10_000)).filter((e) => e.resource?.id === request.id);
      expect(pending.map((e) => e.type)).toEqual([
        'ONBOARDING_REQUESTED',
        winner.status === 'APPROVED' ? 'ONBOARDING_APPROVED' : 'ONBOARDING_REJECTED',
      ]);
      await getStore().markSent(pending.map((e) => e.id));
      expect((await getStore().pendingEvents(10_000)).filter((e) => e.resource?.id === request.id)).toEqual(
        [],
      );
    });
  });
});
