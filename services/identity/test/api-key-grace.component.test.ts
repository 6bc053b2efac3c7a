import { fixedClock } from '@mandate/shared/core';
import { callerFor } from '@mandate/shared/testing';
import { endRotationGraces } from '../src/api-keys/api-keys';
import { identityForSuite, identityStoreAdapters, system } from './helpers';

/** docs/API.md#api-key-rotation-grace: an activated rotation leaves the old key working for a while. */
describe.each(identityStoreAdapters())(
  'identity: API key rotation grace (component, $name store)',
  (adapter) => {
    const clock = fixedClock('2031-04-01T10:00:00.000Z');
    const svc = identityForSuite({ clock }, adapter);

    const resolve = (api_key: string) =>
      svc.call('POST', '/internal/v1/keys/resolve', { caller: system, body: { api_key } });

    /** A tenant whose initial key has a staging successor. */
    async function rotated() {
      const t = await svc.createTenant();
      const caller = callerFor(t.tenantId, { actor: { type: 'api_key', key_id: t.keyId } });
      const keys = `/v1/tenants/${t.tenantId}/api-keys`;
      const res = await svc.call('POST', `${keys}/${t.keyId}/rotate`, { caller });
      expect(res.status).toBe(201);
      return { ...t, caller, keys, successor: res.body as { key_id: string; api_key: string } };
    }
    const graceEnded = (tenantId: string) =>
      svc.publisher
        .forTenant(tenantId)
        .filter((e) => e.type === 'API_KEY_REVOKED' && e.data.reason === 'rotation_grace_ended');

    it('when a successor is activated without a body, then the old key works for 24 h, is shown with grace_ends_at and both links, and is refused and revoked once at the end', async () => {
      const { caller, keys, keyId, secret, successor, tenantId } = await rotated();
      const activated = await svc.call('POST', `${keys}/${successor.key_id}/activate`, { caller });
      expect(activated).toMatchObject({ status: 200, body: { status: 'active', replaces_key_id: keyId } });
      const graceEnds = new Date(clock.now().getTime() + 86_400_000).toISOString();
      expect((await svc.call('GET', `${keys}/${keyId}`, { caller })).body).toMatchObject({
        status: 'active',
        replaced_by_key_id: successor.key_id,
        grace_ends_at: graceEnds,
      });
      const activation = svc.publisher.forTenant(tenantId).find((e) => e.type === 'API_KEY_ACTIVATED');
      expect(activation?.data).toMatchObject({
        grace_seconds: 86_400,
        replaced_key_grace_ends_at: graceEnds,
      });

      clock.advance(86_400_000 - 1);
      expect(await resolve(secret)).toMatchObject({ status: 200, body: { key_id: keyId } });
      // A replaced key in its grace period is not rotated again.
      expect(await svc.call('POST', `${keys}/${keyId}/rotate`, { caller })).toMatchObject({ status: 409 });
      clock.advance(1);
      expect(await resolve(secret)).toMatchObject({ status: 404 });
      expect(await resolve(secret)).toMatchObject({ status: 404 });
      expect((await svc.call('GET', `${keys}/${keyId}`, { caller })).body.status).toBe('revoked');
      expect(graceEnded(tenantId)).toHaveLength(1);
      expect(graceEnded(tenantId)[0]!.data).toMatchObject({ replaced_by_key_id: successor.key_id });
      expect(await resolve(successor.api_key)).toMatchObject({ status: 200 });
    });

    it('when grace_seconds is given, then the old key works exactly that long, and the sweeper revokes it once nobody used it', async () => {
      const { caller, keys, keyId, secret, successor, tenantId } = await rotated();
      const res = await svc.call('POST', `${keys}/${successor.key_id}/activate`, {
        caller,
        body: { grace_seconds: 600 },
      });
      expect(res.status).toBe(200);
      clock.advance(599_000);
      expect(await endRotationGraces(svc.deps)).toBe(0);
      expect(await resolve(secret)).toMatchObject({ status: 200 });
      clock.advance(1_000);
      expect(await endRotationGraces(svc.deps)).toBeGreaterThanOrEqual(1);
      expect(await endRotationGraces(svc.deps)).toBe(0);
      expect((await svc.call('GET', `${keys}/${keyId}`, { caller })).body.status).toBe('revoked');
      expect(graceEnded(tenantId)).toHaveLength(1);
      expect(await resolve(secret)).toMatchObject({ status: 404 });
    });

    it('when the old key is revoked by hand during its grace period, then it stops at once and the end of the grace announces nothing more', async () => {
      const { caller, keys, keyId, secret, successor, tenantId } = await rotated();
      await svc.call('POST', `${keys}/${successor.key_id}/activate`, { caller });
      expect((await svc.call('POST', `${keys}/${keyId}/revoke`, { caller })).status).toBe(200);
      expect(await resolve(secret)).toMatchObject({ status: 404 });
      clock.advance(86_400_000);
      await endRotationGraces(svc.deps);
      expect(graceEnded(tenantId)).toHaveLength(0);
    });

    it.each([
      [{ grace_seconds: -1 }],
      [{ grace_seconds: 604_801 }],
      [{ grace_seconds: 1.5 }],
      [{ grace_seconds: '600' }],
      [{ grace: 600 }],
    ])('when the activation body is %j, then 400 and the key stays staging', async (body) => {
      const { caller, keys, keyId, successor } = await rotated();
      expect(await svc.call('POST', `${keys}/${successor.key_id}/activate`, { caller, body })).toMatchObject({
        status: 400,
        body: { error: expect.any(String), message: expect.any(String) },
      });
      expect((await svc.call('GET', `${keys}/${successor.key_id}`, { caller })).body.status).toBe('staging');
      expect((await svc.call('GET', `${keys}/${keyId}`, { caller })).body).toMatchObject({
        status: 'active',
        replaced_by_key_id: null,
        grace_ends_at: null,
      });
    });
  },
);
