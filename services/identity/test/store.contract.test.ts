import { newId } from '@mandate/shared/core';
import { type AuditEvent } from '@mandate/shared/events';
import { anyEvent, describeStoreContract } from '@mandate/shared/testing';
import type { AccessBaseline } from '../src/access-baselines/access-baseline';
import { PendingSuccessorExists } from '../src/api-keys/api-key';
import { DuplicateRecord } from '../src/common/errors';
import { RECENT_CHANGES_MAX } from '../src/credential-changes/credential-change-store';
import { DuplicateRoleAssignment, permissionsOf, type RoleAssignment } from '../src/role-assignments/roles';
import type { IdentityStore } from '../src/store/identity-store';
import { buildAssignment, buildKeyRecord, buildOnboardingRequest, buildTenant, recordOf } from './factories';
import { identityStoreAdapters } from './helpers';

/** The revocation of `a` as the domain decides it, guarded by `a` as read. */
const revocation = (a: RoleAssignment, at: string): RoleAssignment => ({
  ...a,
  status: 'revoked',
  updated_at: at,
});

describeStoreContract<IdentityStore>('IdentityStore', identityStoreAdapters(), (getStore) => {
  describe('tenants', () => {
    it('when a tenant is inserted, then it is read back as the same plain object', async () => {
      const tenant = buildTenant({ plan: 'enterprise' });
      await getStore().tenants.insert(tenant);
      expect(await getStore().tenants.get(tenant.id)).toEqual(tenant);
    });

    it('when a tenant id is unknown, then get answers null', async () => {
      expect(await getStore().tenants.get(newId('tnt'))).toBeNull();
    });

    it('when the same tenant id is inserted twice, then the second is a conflict', async () => {
      const tenant = buildTenant();
      await getStore().tenants.insert(tenant);
      await expect(getStore().tenants.insert(tenant)).rejects.toBeInstanceOf(DuplicateRecord);
    });
  });

  describe('API keys', () => {
    it('when a key is inserted, then it resolves by its hash and reads without the hash', async () => {
      const tenantId = newId('tnt');
      const built = buildKeyRecord(tenantId, { scopes: ['verify', 'events:read'] });
      await getStore().apiKeys.insert(tenantId, recordOf(built));
      expect(await getStore().apiKeys.findByHash(built.secret_hash)).toEqual(recordOf(built));
      const { secret_hash: _h, ...withoutHash } = recordOf(built);
      expect(await getStore().apiKeys.get(tenantId, built.key_id)).toEqual(withoutHash);
      const listed = await getStore().apiKeys.list(tenantId, { limit: 10 });
      expect(listed).toEqual([withoutHash]);
      expect(JSON.stringify(listed)).not.toContain(built.secret_hash);
    });

    it('when another tenant asks for a key, then it is absent', async () => {
      const owner = newId('tnt');
      const other = newId('tnt');
      const built = buildKeyRecord(owner);
      await getStore().apiKeys.insert(owner, recordOf(built));
      expect(await getStore().apiKeys.get(other, built.key_id)).toBeNull();
      expect(await getStore().apiKeys.list(other, { limit: 10 })).toEqual([]);
      expect(
        await getStore().apiKeys.setStatus(other, built.key_id, { from: 'active', to: 'revoked' }),
      ).toBeNull();
      expect((await getStore().apiKeys.get(owner, built.key_id))?.status).toBe('active');
    });

    it('when two keys share a secret hash, then the second insert is a conflict', async () => {
      const first = buildKeyRecord(newId('tnt'));
      await getStore().apiKeys.insert(first.tenant_id, recordOf(first));
      const second = buildKeyRecord(newId('tnt'), { secret_hash: first.secret_hash });
      await expect(getStore().apiKeys.insert(second.tenant_id, recordOf(second))).rejects.toBeInstanceOf(
        DuplicateRecord,
      );
    });

    it('when a key already has a staging successor, then a second staging successor is refused until the first leaves staging', async () => {
      const tenantId = newId('tnt');
      const old = buildKeyRecord(tenantId);
      await getStore().apiKeys.insert(tenantId, recordOf(old));
      const successor = (over = {}) =>
        buildKeyRecord(tenantId, { status: 'staging', replaces_key_id: old.key_id, ...over });
      const first = successor();
      await getStore().apiKeys.insert(tenantId, recordOf(first));
      const second = successor();
      await expect(getStore().apiKeys.insert(tenantId, recordOf(second))).rejects.toBeInstanceOf(
        PendingSuccessorExists,
      );
      expect(await getStore().apiKeys.findByHash(second.secret_hash)).toBeNull();
      // Concurrent inserts: the database lets exactly one through.
      await getStore().apiKeys.setStatus(tenantId, first.key_id, { from: 'staging', to: 'revoked' });
      const racing = await Promise.allSettled(
        [successor(), successor(), successor()].map((r) => getStore().apiKeys.insert(tenantId, recordOf(r))),
      );
      expect(racing.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      // Another key's successor is not affected.
      const other = buildKeyRecord(tenantId);
      await getStore().apiKeys.insert(tenantId, recordOf(other));
      await getStore().apiKeys.insert(
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
      for (const k of [due2, young, active, due1]) await getStore().apiKeys.insert(k.tenant_id, recordOf(k));
      const listed = await getStore().apiKeys.listStagingCreatedBefore(cutoff, 100);
      const ours = listed.filter((k) => [tenantA, tenantB].includes(k.tenant_id)).map((k) => k.key_id);
      expect(ours).toEqual([due1.key_id, due2.key_id]);
      expect(listed.every((k) => !('secret_hash' in k))).toBe(true);
    });

    it('when usable keys are listed by creation time or by id, then only active and staging keys come, oldest first, across tenants, with their hash', async () => {
      const since = '2031-01-01T00:00:00.000Z';
      const tenantA = newId('tnt');
      const tenantB = newId('tnt');
      const before = buildKeyRecord(tenantA, { status: 'active', created_at: '2030-12-31T23:59:59.999Z' });
      const atSince = buildKeyRecord(tenantB, { status: 'staging', created_at: since });
      const later = buildKeyRecord(tenantA, { status: 'active', created_at: '2031-01-02T00:00:00.000Z' });
      const revoked = buildKeyRecord(tenantB, { status: 'revoked', created_at: '2031-01-01T12:00:00.000Z' });
      for (const k of [later, revoked, before, atSince])
        await getStore().apiKeys.insert(k.tenant_id, recordOf(k));
      const ours = (rows: { tenant_id: string; key_id: string }[]) =>
        rows.filter((k) => [tenantA, tenantB].includes(k.tenant_id)).map((k) => k.key_id);
      const listed = await getStore().apiKeys.listUsableHashes(since, 1000);
      expect(ours(listed)).toEqual([atSince.key_id, later.key_id]);
      expect(listed.find((k) => k.key_id === later.key_id)).toMatchObject({
        tenant_id: tenantA,
        status: 'active',
        created_at: later.created_at,
        grace_ends_at: null,
        secret_hash: later.secret_hash,
      });
      expect(ours(await getStore().apiKeys.listUsableHashes(undefined, 100_000))).toEqual([
        before.key_id,
        atSince.key_id,
        later.key_id,
      ]);
      const named = await getStore().apiKeys.usableHashesOf(
        [before, revoked, later].map((k) => ({ tenant_id: k.tenant_id, key_id: k.key_id })),
      );
      expect(ours(named).sort()).toEqual([before.key_id, later.key_id].sort());
      // Another tenant's id is another key.
      expect(
        await getStore().apiKeys.usableHashesOf([{ tenant_id: tenantB, key_id: before.key_id }]),
      ).toEqual([]);
    });

    it('when an unknown hash is looked up, then it answers null', async () => {
      expect(await getStore().apiKeys.findByHash('0'.repeat(64))).toBeNull();
    });

    it('when keys are listed, then they come newest first and page by the id cursor', async () => {
      const tenantId = newId('tnt');
      const built = [buildKeyRecord(tenantId), buildKeyRecord(tenantId), buildKeyRecord(tenantId)];
      for (const b of built) await getStore().apiKeys.insert(tenantId, recordOf(b));
      const ids = built.map((b) => b.key_id).reverse();
      const first = await getStore().apiKeys.list(tenantId, { limit: 2 });
      expect(first.map((k) => k.key_id)).toEqual(ids.slice(0, 2));
      const rest = await getStore().apiKeys.list(tenantId, { limit: 2, before: first[1]!.key_id });
      expect(rest.map((k) => k.key_id)).toEqual(ids.slice(2));
    });

    it('when a status update names the current status, then it applies; otherwise it answers null', async () => {
      const tenantId = newId('tnt');
      const built = buildKeyRecord(tenantId, { status: 'staging' });
      await getStore().apiKeys.insert(tenantId, recordOf(built));
      expect(
        await getStore().apiKeys.setStatus(tenantId, built.key_id, { from: 'active', to: 'revoked' }),
      ).toBeNull();
      const activated = await getStore().apiKeys.setStatus(tenantId, built.key_id, {
        from: 'staging',
        to: 'active',
      });
      expect(activated).toMatchObject({ key_id: built.key_id, status: 'active' });
      expect(activated).not.toHaveProperty('secret_hash');
      expect(
        await getStore().apiKeys.setStatus(tenantId, built.key_id, { from: 'active', to: 'revoked' }),
      ).toMatchObject({
        status: 'revoked',
      });
      expect(
        await getStore().apiKeys.setStatus(tenantId, built.key_id, { from: 'active', to: 'revoked' }),
      ).toBeNull();
      expect((await getStore().apiKeys.findByHash(built.secret_hash))?.status).toBe('revoked');
    });

    it('when a key is touched, then last_used_at is set, and not rewritten within the interval', async () => {
      const tenantId = newId('tnt');
      const built = buildKeyRecord(tenantId);
      await getStore().apiKeys.insert(tenantId, recordOf(built));
      await getStore().apiKeys.touch(tenantId, built.key_id, '2026-01-01T00:00:00.000Z', 60_000);
      await getStore().apiKeys.touch(tenantId, built.key_id, '2026-01-01T00:00:30.000Z', 60_000);
      expect((await getStore().apiKeys.get(tenantId, built.key_id))?.last_used_at).toBe(
        '2026-01-01T00:00:00.000Z',
      );
      await getStore().apiKeys.touch(tenantId, built.key_id, '2026-01-01T00:01:00.000Z', 60_000);
      expect((await getStore().apiKeys.get(tenantId, built.key_id))?.last_used_at).toBe(
        '2026-01-01T00:01:00.000Z',
      );
    });
  });

  describe("API keys used (the gateways' report)", () => {
    it('when many keys are touched at once, then each gets last_used_at like touch, and one touched within the interval keeps its time', async () => {
      const tenantId = newId('tnt');
      const [a, b] = [buildKeyRecord(tenantId), buildKeyRecord(tenantId)];
      for (const k of [a, b]) await getStore().apiKeys.insert(tenantId, recordOf(k));
      await getStore().apiKeys.touch(tenantId, a.key_id, '2026-01-01T00:00:30.000Z', 60_000);
      const keys = [a, b].map((k) => ({ tenant_id: tenantId, key_id: k.key_id }));
      await getStore().apiKeys.touchMany(keys, '2026-01-01T00:01:00.000Z', 60_000);
      expect((await getStore().apiKeys.get(tenantId, a.key_id))?.last_used_at).toBe(
        '2026-01-01T00:00:30.000Z',
      );
      expect((await getStore().apiKeys.get(tenantId, b.key_id))?.last_used_at).toBe(
        '2026-01-01T00:01:00.000Z',
      );
    });
  });

  describe('credential epoch', () => {
    const key = (id: string) => ({ kind: 'api_key' as const, tenant_id: 'tnt_epoch', id });

    it('when changes are recorded, then the epoch moves by one each and a gateway behind is told exactly what changed since', async () => {
      const store = getStore().credentialChanges;
      const before = (await store.since()).epoch;
      expect(await store.record([key('key_a')])).toBe(before + 1);
      expect(await store.record([key('key_b'), { kind: 'tenant', tenant_id: 'tnt_epoch' }])).toBe(before + 3);
      expect(await store.since(before + 3)).toEqual({ epoch: before + 3, changes: [] });
      expect(await store.since(before + 1)).toEqual({
        epoch: before + 3,
        changes: [key('key_b'), { kind: 'tenant', tenant_id: 'tnt_epoch' }],
      });
      expect((await store.since(before)).changes).toEqual([
        key('key_a'),
        key('key_b'),
        { kind: 'tenant', tenant_id: 'tnt_epoch' },
      ]);
    });

    it('when a gateway gives no epoch, one ahead of the store, or one older than the changes kept, then the changes are null (drop everything)', async () => {
      const store = getStore().credentialChanges;
      const base = await store.record([key('key_c')]);
      expect(await store.since()).toEqual({ epoch: base, changes: null });
      expect(await store.since(base + 5)).toEqual({ epoch: base, changes: null });
      await store.record(Array.from({ length: RECENT_CHANGES_MAX }, (_, i) => key(`key_${i}`)));
      expect((await store.since(base)).changes).toHaveLength(RECENT_CHANGES_MAX);
      expect(await store.since(base - 1)).toEqual({ epoch: base + RECENT_CHANGES_MAX, changes: null });
    });

    it('when changes are recorded concurrently, then every one is listed once, each at its own epoch', async () => {
      const store = getStore().credentialChanges;
      const before = (await store.since()).epoch;
      const epochs = await Promise.all(
        Array.from({ length: 10 }, (_, i) => store.record([key(`key_p${i}`)])),
      );
      expect([...epochs].sort((a, b) => a - b)).toEqual(Array.from({ length: 10 }, (_, i) => before + i + 1));
      const { changes } = await store.since(before);
      expect(changes!.map((c) => c.id).sort()).toEqual(
        Array.from({ length: 10 }, (_, i) => `key_p${i}`).sort(),
      );
    });
  });

  describe('role assignments', () => {
    it("when an assignment is inserted, then it is read back and found as the subject's active one", async () => {
      const tenantId = newId('tnt');
      const a = buildAssignment(tenantId);
      await getStore().roleAssignments.insert(tenantId, a);
      expect(await getStore().roleAssignments.get(tenantId, a.id)).toEqual(a);
      expect(await getStore().roleAssignments.findActive(tenantId, a.subject_id)).toEqual(a);
      expect(await getStore().roleAssignments.findActive(newId('tnt'), a.subject_id)).toBeNull();
      expect(await getStore().roleAssignments.get(newId('tnt'), a.id)).toBeNull();
    });

    it('when a subject already has an active assignment, then a second one is a conflict', async () => {
      const tenantId = newId('tnt');
      const a = buildAssignment(tenantId);
      await getStore().roleAssignments.insert(tenantId, a);
      await expect(
        getStore().roleAssignments.insert(tenantId, buildAssignment(tenantId, { subject_id: a.subject_id })),
      ).rejects.toBeInstanceOf(DuplicateRoleAssignment);
    });

    it('when the same subject is assigned in another tenant, then both assignments stand', async () => {
      const a = buildAssignment(newId('tnt'));
      const b = buildAssignment(newId('tnt'), { subject_id: a.subject_id });
      await getStore().roleAssignments.insert(a.tenant_id, a);
      await getStore().roleAssignments.insert(b.tenant_id, b);
      expect(await getStore().roleAssignments.findActive(b.tenant_id, a.subject_id)).toEqual(b);
    });

    it('when the active assignment is revoked, then a new one for the subject is allowed', async () => {
      const tenantId = newId('tnt');
      const a = buildAssignment(tenantId);
      await getStore().roleAssignments.insert(tenantId, a);
      const revoked = await getStore().roleAssignments.replace(
        tenantId,
        a,
        revocation(a, '2026-01-02T00:00:00.000Z'),
      );
      expect(revoked).toMatchObject({
        id: a.id,
        status: 'revoked',
        updated_at: '2026-01-02T00:00:00.000Z',
      });
      expect(
        await getStore().roleAssignments.replace(tenantId, a, revocation(a, '2026-01-03T00:00:00.000Z')),
      ).toBeNull();
      expect(await getStore().roleAssignments.findActive(tenantId, a.subject_id)).toBeNull();
      const next = buildAssignment(tenantId, { subject_id: a.subject_id, roles: ['tenant_admin'] });
      await getStore().roleAssignments.insert(tenantId, next);
      expect(await getStore().roleAssignments.findActive(tenantId, a.subject_id)).toEqual(next);
    });

    describe("the tenant's administrator count (the guard of the last tenant_admin)", () => {
      const admin = (tenantId: string) =>
        buildAssignment(tenantId, { roles: ['tenant_admin'], permissions: permissionsOf(['tenant_admin']) });

      it('when the count is first ensured, then it counts the active assignments holding tenant:write, and only once', async () => {
        const tenantId = newId('tnt');
        const store = getStore().roleAssignments;
        const [a, b, viewer] = [admin(tenantId), admin(tenantId), buildAssignment(tenantId)];
        for (const x of [a, b, viewer]) await store.insert(tenantId, x);
        await store.insert(newId('tnt'), admin(newId('tnt')));
        await Promise.all([store.ensureAdminCount(tenantId), store.ensureAdminCount(tenantId)]);
        // Two admins: one may leave, the second may not (the count never goes below one).
        expect(await store.leaveAdmin(tenantId)).toBe(true);
        expect(await store.leaveAdmin(tenantId)).toBe(false);
        // Ensuring again does not recount: the count stays what the guarded writes made it.
        await store.ensureAdminCount(tenantId);
        expect(await store.leaveAdmin(tenantId)).toBe(false);
        await store.joinAdmin(tenantId);
        expect(await store.leaveAdmin(tenantId)).toBe(true);
      });

      it('when two admins leave at once, then exactly one conditional decrement passes', async () => {
        const tenantId = newId('tnt');
        const store = getStore().roleAssignments;
        for (const x of [admin(tenantId), admin(tenantId)]) await store.insert(tenantId, x);
        await store.ensureAdminCount(tenantId);
        const left = await Promise.all(Array.from({ length: 6 }, () => store.leaveAdmin(tenantId)));
        expect(left.filter(Boolean)).toHaveLength(1);
      });
    });

    it("when assignments are listed, then newest first, filtered, paged by id, and only the tenant's own", async () => {
      const tenantId = newId('tnt');
      const all = [buildAssignment(tenantId), buildAssignment(tenantId), buildAssignment(tenantId)];
      for (const a of all) await getStore().roleAssignments.insert(tenantId, a);
      await getStore().roleAssignments.insert(newId('tnt'), buildAssignment(newId('tnt')));
      await getStore().roleAssignments.replace(
        tenantId,
        all[0]!,
        revocation(all[0]!, '2026-01-02T00:00:00.000Z'),
      );
      const ids = (xs: { id: string }[]) => xs.map((x) => x.id);
      expect(ids(await getStore().roleAssignments.list(tenantId, { limit: 10 }))).toEqual(
        ids([...all].reverse()),
      );
      expect(ids(await getStore().roleAssignments.list(tenantId, { limit: 1, before: all[2]!.id }))).toEqual([
        all[1]!.id,
      ]);
      expect(ids(await getStore().roleAssignments.list(tenantId, { limit: 10, status: 'revoked' }))).toEqual([
        all[0]!.id,
      ]);
      expect(
        ids(await getStore().roleAssignments.list(tenantId, { limit: 10, subjectId: all[1]!.subject_id })),
      ).toEqual([all[1]!.id]);
    });

    it("when one subject's assignments are filtered by subject, status and a cursor, then only the older matching ones come, newest first", async () => {
      const tenantId = newId('tnt');
      const subject = `dashboard:${newId('req')}`;
      const history: string[] = [];
      for (let i = 0; i < 4; i++) {
        const a = buildAssignment(tenantId, { subject_id: subject });
        await getStore().roleAssignments.insert(tenantId, a);
        history.push(a.id);
        if (i < 3)
          await getStore().roleAssignments.replace(tenantId, a, revocation(a, '2026-01-02T00:00:00.000Z'));
      }
      await getStore().roleAssignments.insert(tenantId, buildAssignment(tenantId));
      const list = (options: { status?: 'active' | 'revoked'; before?: string; limit?: number }) =>
        getStore()
          .roleAssignments.list(tenantId, { limit: 10, subjectId: subject, ...options })
          .then((xs) => xs.map((x) => x.id));
      expect(await list({ status: 'active' })).toEqual([history[3]]);
      expect(await list({ status: 'revoked' })).toEqual([history[2], history[1], history[0]]);
      expect(await list({ status: 'revoked', before: history[2], limit: 1 })).toEqual([history[1]]);
      expect(await list({ status: 'active', before: history[3] })).toEqual([]);
      expect((await getStore().roleAssignments.findActive(tenantId, subject))?.id).toBe(history[3]);
    });

    it('when an assignment is replaced, then the write applies only while it is still as the caller read it', async () => {
      const tenantId = newId('tnt');
      const a = buildAssignment(tenantId);
      await getStore().roleAssignments.insert(tenantId, a);
      const next: RoleAssignment = {
        ...a,
        roles: ['tenant_auditor'],
        permissions: ['events:read'],
        updated_at: '2026-01-02T00:00:00.000Z',
      };
      expect(await getStore().roleAssignments.replace(newId('tnt'), a, next)).toBeNull();
      expect(await getStore().roleAssignments.replace(tenantId, a, next)).toEqual(next);
      // Decided on a stale read (other roles, or another updated_at): refused, nothing written.
      const later = { ...next, updated_at: '2026-01-03T00:00:00.000Z' };
      expect(await getStore().roleAssignments.replace(tenantId, a, later)).toBeNull();
      expect(
        await getStore().roleAssignments.replace(tenantId, { ...next, roles: ['tenant_viewer'] }, later),
      ).toBeNull();
      expect(await getStore().roleAssignments.get(tenantId, a.id)).toEqual(next);
      await getStore().roleAssignments.replace(tenantId, next, revocation(next, '2026-01-03T00:00:00.000Z'));
      // Revoked: a change decided on the active assignment is refused.
      expect(await getStore().roleAssignments.replace(tenantId, next, later)).toBeNull();
      expect(await getStore().roleAssignments.get(tenantId, a.id)).toMatchObject({ status: 'revoked' });
    });
  });

  describe('onboarding requests', () => {
    it('when a request is inserted, then it reads back, lists by status and is decided exactly once', async () => {
      const r = buildOnboardingRequest({ country: 'DE' });
      await getStore().onboarding.insert(r);
      await expect(getStore().onboarding.insert(r)).rejects.toBeInstanceOf(DuplicateRecord);
      expect(await getStore().onboarding.get(r.id)).toEqual(r);
      const pending = await getStore().onboarding.list({ limit: 100, status: 'PENDING' });
      expect(pending.map((x) => x.id)).toContain(r.id);
      const tenantId = newId('tnt');
      const approval = {
        ...r,
        status: 'APPROVED' as const,
        decided_at: '2026-01-02T00:00:00.000Z',
        tenant_id: tenantId,
      };
      expect(await getStore().onboarding.decide(approval)).toEqual(approval);
      expect(
        await getStore().onboarding.decide({
          ...r,
          status: 'REJECTED',
          decided_at: '2026-01-03T00:00:00.000Z',
        }),
      ).toBeNull();
      expect(await getStore().onboarding.get(r.id)).toEqual(approval);
      const approved = await getStore().onboarding.list({ limit: 100, status: 'APPROVED' });
      expect(approved.map((x) => x.id)).toContain(r.id);
      expect(
        (await getStore().onboarding.list({ limit: 100, status: 'PENDING' })).map((x) => x.id),
      ).not.toContain(r.id);
    });

    it('when requests are listed, then newest first and paged by id', async () => {
      const a = buildOnboardingRequest();
      const b = buildOnboardingRequest();
      await getStore().onboarding.insert(a);
      await getStore().onboarding.insert(b);
      const page = await getStore().onboarding.list({ limit: 1, before: b.id });
      expect(page.map((x) => x.id)).toEqual([a.id]);
    });
  });

  describe('widget config', () => {
    it('when a configuration is put twice, then the second replaces the first, per tenant', async () => {
      const tenantId = newId('tnt');
      expect(await getStore().widgetConfigs.get(tenantId)).toBeNull();
      const first = {
        allowed_origins: ['https://a.example.com'],
        theme: { primary_color: '#ffffff' },
        locale: 'en',
        updated_at: '2026-01-01T00:00:00.000Z',
      };
      await getStore().widgetConfigs.put(tenantId, first);
      expect(await getStore().widgetConfigs.get(tenantId)).toEqual(first);
      const second = {
        allowed_origins: [],
        theme: {},
        locale: null,
        updated_at: '2026-01-02T00:00:00.000Z',
      };
      await getStore().widgetConfigs.put(tenantId, second);
      expect(await getStore().widgetConfigs.get(tenantId)).toEqual(second);
      expect(await getStore().widgetConfigs.get(newId('tnt'))).toBeNull();
    });
  });
  describe('tenants list', () => {
    it('when tenants are listed, then by id descending, paged with before', async () => {
      const mine = [buildTenant(), buildTenant(), buildTenant()];
      for (const t of mine) await getStore().tenants.insert(t);
      // The store is shared by the suite: the three newest ids are these.
      const newest = await getStore().tenants.list({ limit: 3 });
      expect(newest).toEqual([mine[2], mine[1], mine[0]]);
      expect(await getStore().tenants.list({ limit: 1, before: mine[2]!.id })).toEqual([mine[1]]);
    });
  });

  describe('access baselines', () => {
    const baseline = (tenantId: string, savedAt: string, keyName = 'ci'): AccessBaseline => ({
      tenant_id: tenantId,
      saved_at: savedAt,
      saved_by: { type: 'user', subject_id: 'dashboard:alice' },
      snapshot: {
        api_keys: [{ key_id: newId('key'), name: keyName, scopes: ['verify'], status: 'active' }],
        role_assignments: [],
        widget_allowed_origins: [],
        truncated: false,
      },
    });

    it('when a baseline is put, then it is read back as the same plain object, for its tenant only', async () => {
      const tenantId = newId('tnt');
      expect(await getStore().accessBaselines.get(tenantId)).toBeNull();
      const b = baseline(tenantId, '2026-01-01T00:00:00.000Z');
      expect(await getStore().accessBaselines.put(b)).toBe(true);
      expect(await getStore().accessBaselines.get(tenantId)).toEqual(b);
      expect(await getStore().accessBaselines.get(newId('tnt'))).toBeNull();
    });

    it('when a later baseline is put, then it replaces the earlier; an earlier one never replaces a later', async () => {
      const tenantId = newId('tnt');
      const later = baseline(tenantId, '2026-01-02T00:00:00.000Z', 'later');
      expect(await getStore().accessBaselines.put(baseline(tenantId, '2026-01-01T00:00:00.000Z'))).toBe(true);
      expect(await getStore().accessBaselines.put(later)).toBe(true);
      expect(await getStore().accessBaselines.get(tenantId)).toEqual(later);
      const stale = anyEvent({
        type: 'ACCESS_BASELINE_SAVED',
        tenantId,
        resource: { type: 'access_baseline', id: tenantId },
        data: {},
      });
      expect(
        await getStore().accessBaselines.put(baseline(tenantId, '2026-01-01T12:00:00.000Z'), [stale]),
      ).toBe(false);
      expect(await getStore().accessBaselines.get(tenantId)).toEqual(later);
      // A refused write stores none of its events.
      expect((await getStore().pendingEvents(10_000)).map((e) => e.id)).not.toContain(stale.id);
    });

    it('when first saves race, then one baseline per tenant remains, one of those put', async () => {
      const tenantId = newId('tnt');
      const puts = ['00', '01', '02', '03'].map((s) => baseline(tenantId, `2026-01-01T00:00:${s}.000Z`, s));
      const results = await Promise.all(puts.map((b) => getStore().accessBaselines.put(b)));
      expect(results).toContain(true);
      expect(puts).toContainEqual(await getStore().accessBaselines.get(tenantId));
      // The latest put always wins: nothing later can refuse it.
      expect(await getStore().accessBaselines.get(tenantId)).toEqual(puts[3]);
    });

    it('when a baseline carries events, then they are pending with it until marked sent, never on a read', async () => {
      const tenantId = newId('tnt');
      const saved = anyEvent({
        type: 'ACCESS_BASELINE_SAVED',
        tenantId,
        resource: { type: 'access_baseline', id: tenantId },
        data: { api_keys: 1 },
      });
      await getStore().accessBaselines.put(baseline(tenantId, new Date().toISOString()), [saved]);
      expect((await getStore().pendingEvents(10_000)).map((e) => e.id)).toContain(saved.id);
      expect(Object.keys((await getStore().accessBaselines.get(tenantId))!)).not.toContain('outbox');
      await getStore().markSent([saved.id]);
      expect((await getStore().pendingEvents(10_000)).map((e) => e.id)).not.toContain(saved.id);
    });
  });

  describe('outbox', () => {
    const event = (
      type: AuditEvent['type'],
      tenantId: string | null,
      id: string,
      data: Record<string, unknown> = {},
    ) => anyEvent({ type, tenantId, resource: { type: 'test', id }, data });
    /** The store is shared by the suite: look only at this test's events. */
    const pendingOf = async (ids: string[]) =>
      (await getStore().pendingEvents(10_000)).filter((e) => ids.includes(e.id));

    it('when inserts carry events, then each is pending with its record, never on a read, until marked sent', async () => {
      const tenant = buildTenant();
      const created = event('TENANT_CREATED', tenant.id, tenant.id);
      await getStore().tenants.insert(tenant, [created]);
      const built = buildKeyRecord(tenant.id);
      const keyCreated = event('API_KEY_CREATED', tenant.id, built.key_id);
      await getStore().apiKeys.insert(tenant.id, recordOf(built), [keyCreated]);
      const assignment = buildAssignment(tenant.id);
      const assigned = event('TENANT_ROLE_ASSIGNED', tenant.id, assignment.id);
      await getStore().roleAssignments.insert(tenant.id, assignment, [assigned]);
      const widget = event('WIDGET_CONFIG_UPDATED', tenant.id, tenant.id);
      await getStore().widgetConfigs.put(
        tenant.id,
        { allowed_origins: [], theme: {}, locale: null, updated_at: new Date().toISOString() },
        [widget],
      );
      const ids = [created.id, keyCreated.id, assigned.id, widget.id];
      expect((await pendingOf(ids)).map((e) => e.id).sort()).toEqual([...ids].sort());
      const reads = [
        await getStore().tenants.get(tenant.id),
        await getStore().apiKeys.get(tenant.id, built.key_id),
        await getStore().apiKeys.findByHash(built.secret_hash),
        await getStore().roleAssignments.get(tenant.id, assignment.id),
        await getStore().widgetConfigs.get(tenant.id),
      ];
      for (const read of reads) expect(Object.keys(read!)).not.toContain('outbox');
      await getStore().markSent(ids);
      expect(await pendingOf(ids)).toEqual([]);
    });

    it('when a guarded write carries events, then they are stored with the change, and a refused write stores none', async () => {
      const tenantId = newId('tnt');
      const built = buildKeyRecord(tenantId, { status: 'staging' });
      await getStore().apiKeys.insert(tenantId, recordOf(built));
      const activation = { from: 'staging', to: 'active' } as const;
      const activated = await getStore().apiKeys.setStatus(tenantId, built.key_id, activation, [
        event('API_KEY_ACTIVATED', tenantId, built.key_id, { status: 'active' }),
      ]);
      expect(activated?.status).toBe('active');
      const refused = await getStore().apiKeys.setStatus(tenantId, built.key_id, activation, [
        event('API_KEY_ACTIVATED', tenantId, built.key_id, { status: 'refused' }),
      ]);
      expect(refused).toBeNull();
      const pending = (await getStore().pendingEvents(10_000)).filter((e) => e.resource?.id === built.key_id);
      expect(pending.map((e) => [e.type, e.data])).toEqual([['API_KEY_ACTIVATED', { status: 'active' }]]);
      await getStore().markSent(pending.map((e) => e.id));

      const assignment = buildAssignment(tenantId, { roles: ['tenant_viewer'] });
      await getStore().roleAssignments.insert(tenantId, assignment);
      const operator: RoleAssignment = {
        ...assignment,
        roles: ['tenant_operator'],
        permissions: ['mandates:read'],
        updated_at: new Date(Date.parse(assignment.updated_at) + 1).toISOString(),
      };
      await getStore().roleAssignments.replace(tenantId, assignment, operator, [
        event('TENANT_ROLE_ASSIGNED', tenantId, assignment.id, { roles: ['tenant_operator'] }),
      ]);
      const at = new Date(Date.parse(operator.updated_at) + 1).toISOString();
      await getStore().roleAssignments.replace(tenantId, operator, revocation(operator, at), [
        event('TENANT_ROLE_REVOKED', tenantId, assignment.id, { status: 'revoked' }),
      ]);
      // Decided on reads that are no longer current: both refused, neither event stored.
      for (const stale of [assignment, operator]) {
        expect(
          await getStore().roleAssignments.replace(tenantId, stale, revocation(stale, at), [
            event('TENANT_ROLE_REVOKED', tenantId, assignment.id, { stale: true }),
          ]),
        ).toBeNull();
      }
      const onAssignment = (await getStore().pendingEvents(10_000)).filter(
        (e) => e.resource?.id === assignment.id,
      );
      expect(onAssignment.map((e) => [e.type, e.data])).toEqual([
        ['TENANT_ROLE_ASSIGNED', { roles: ['tenant_operator'] }],
        ['TENANT_ROLE_REVOKED', { status: 'revoked' }],
      ]);
      await getStore().markSent(onAssignment.map((e) => e.id));
    });

    it('when an onboarding request is decided twice, then only the winning decision stores its event', async () => {
      const request = buildOnboardingRequest({ country: 'DE' });
      const requested = event('ONBOARDING_REQUESTED', null, request.id);
      await getStore().onboarding.insert(request, [requested]);
      const decide = (status: 'APPROVED' | 'REJECTED') =>
        getStore().onboarding.decide({ ...request, status, decided_at: new Date().toISOString() }, [
          event(status === 'APPROVED' ? 'ONBOARDING_APPROVED' : 'ONBOARDING_REJECTED', null, request.id, {
            status,
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
