import { fixedClock, newId } from '@mandate/shared/core';
import { callerFor } from '@mandate/shared/testing';
import { expireStagingKeys, revokeApiKey } from '../src/api-keys/api-keys';
import {
  expectOneOfRacingRevocations,
  identityForSuite,
  identityStoreAdapters,
  startIdentity,
  system,
  type Identity,
} from './helpers';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A tenant and a caller holding one of its keys, as the gateway would present it. */
async function tenantWithCaller(svc: Identity) {
  const t = await svc.createTenant();
  const caller = callerFor(t.tenantId, { actor: { type: 'api_key', key_id: t.keyId } });
  const keys = `/v1/tenants/${t.tenantId}/api-keys`;
  return { ...t, caller, keys };
}

describe.each(identityStoreAdapters())('identity: API keys (component, $name store)', (adapter) => {
  const svc = identityForSuite({}, adapter);

  const resolve = (api_key: string, tenant_id?: string) =>
    svc.call('POST', '/internal/v1/keys/resolve', { caller: system, body: { api_key, tenant_id } });

  describe('POST /v1/tenants/:tenantId/api-keys', () => {
    it('when a key is created, then 201 answers exactly key_id, api_key, name, scopes, status, created_at', async () => {
      const { caller, keys } = await tenantWithCaller(svc);
      const res = await svc.call('POST', keys, {
        caller,
        body: { name: 'ci', scopes: ['mandates:read', 'verify'] },
      });
      expect(res).toMatchObject({ status: 201 });
      expect(res.body).toEqual({
        key_id: expect.stringMatching(/^key_[0-9a-z]{26}$/),
        api_key: expect.stringMatching(/^msk_[0-9A-Za-z]{43}$/),
        name: 'ci',
        scopes: ['mandates:read', 'verify'],
        status: 'active',
        created_at: expect.stringMatching(ISO),
      });
      expect(await resolve(res.body.api_key)).toMatchObject({
        status: 200,
        body: { key_id: res.body.key_id, scopes: ['mandates:read', 'verify'] },
      });
    });

    it('when two keys are created, then their secrets differ', async () => {
      const { caller, keys } = await tenantWithCaller(svc);
      const a = await svc.call('POST', keys, { caller, body: { name: 'a', scopes: ['verify'] } });
      const b = await svc.call('POST', keys, { caller, body: { name: 'b', scopes: ['verify'] } });
      expect(a.body.api_key).not.toBe(b.body.api_key);
    });

    it.each([
      ['name is missing', { scopes: ['verify'] }, 'name is required'],
      [
        'name is 101 characters',
        { name: 'x'.repeat(101), scopes: ['verify'] },
        'name must be at most 100 characters',
      ],
      ['scopes are missing', { name: 'ci' }, 'scopes is required'],
      ['scopes are empty', { name: 'ci', scopes: [] }, 'scopes must have at least 1 item(s)'],
      [
        'a scope is unknown',
        { name: 'ci', scopes: ['platform:admin'] },
        expect.stringMatching(/^scopes\.0 must be one of: /),
      ],
      ['a scope repeats', { name: 'ci', scopes: ['verify', 'verify'] }, 'scopes: must not repeat a scope'],
      [
        'a field is unknown',
        { name: 'ci', scopes: ['verify'], expires_at: 'x' },
        'expires_at is not allowed',
      ],
    ])('when %s, then 400 naming the field', async (_label, body, message) => {
      const { caller, keys } = await tenantWithCaller(svc);
      const res = await svc.call('POST', keys, { caller, body });
      expect(res).toMatchObject({ status: 400, body: { error: 'BAD_REQUEST' } });
      expect(res.body.message).toEqual(message);
    });

    it('when the path names another tenant, then 404 and nothing is created', async () => {
      const { caller } = await tenantWithCaller(svc);
      const other = await tenantWithCaller(svc);
      const res = await svc.call('POST', other.keys, { caller, body: { name: 'x', scopes: ['verify'] } });
      expect(res).toMatchObject({ status: 404, body: { error: 'NOT_FOUND' } });
      const list = await svc.call('GET', other.keys, { caller: other.caller });
      expect(list.body.data).toHaveLength(1);
    });

    it('when there is no internal token, then 401', async () => {
      const { keys } = await tenantWithCaller(svc);
      expect(
        await svc.call('POST', keys, { caller: null, body: { name: 'x', scopes: ['verify'] } }),
      ).toMatchObject({
        status: 401,
        body: { error: 'UNAUTHORIZED' },
      });
    });

    it('when the method is wrong, then 405', async () => {
      const { caller, keys } = await tenantWithCaller(svc);
      expect(await svc.call('DELETE', keys, { caller })).toMatchObject({
        status: 405,
        body: { error: 'METHOD_NOT_ALLOWED' },
      });
      expect(await svc.call('GET', `${keys}/${newId('key')}/revoke`, { caller })).toMatchObject({
        status: 405,
      });
    });
  });

  describe('GET /v1/tenants/:tenantId/api-keys and /:keyId', () => {
    it('when keys are listed, then they come newest first, without secrets, with last_used_at', async () => {
      const { caller, keys, keyId, secret } = await tenantWithCaller(svc);
      const created = await svc.call('POST', keys, {
        caller,
        body: { name: 'second', scopes: ['events:read'] },
      });
      const res = await svc.call('GET', keys, { caller });
      expect(res).toMatchObject({ status: 200, body: { has_more: false, next_cursor: null } });
      expect(res.body.data.map((k: { key_id: string }) => k.key_id)).toEqual([created.body.key_id, keyId]);
      expect(res.body.data[0]).toEqual({
        key_id: created.body.key_id,
        name: 'second',
        scopes: ['events:read'],
        status: 'active',
        created_at: created.body.created_at,
        last_used_at: null,
        replaces_key_id: null,
        replaced_by_key_id: null,
        grace_ends_at: null,
      });
      const text = JSON.stringify(res.body);
      expect(text).not.toContain(secret);
      expect(text).not.toContain(created.body.api_key);
      expect(text).not.toMatch(/api_key|secret|hash/);
    });

    it('when a key has been resolved, then last_used_at shows when', async () => {
      const { caller, keys, keyId, secret } = await tenantWithCaller(svc);
      await resolve(secret);
      // The use is recorded after the resolve has answered (best effort, off the request path), so
      // a store with a round trip (MongoDB) may show it a moment later: poll with a deadline.
      const deadline = Date.now() + 20_000;
      let res = await svc.call('GET', `${keys}/${keyId}`, { caller });
      while (res.body.last_used_at === null && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
        res = await svc.call('GET', `${keys}/${keyId}`, { caller });
      }
      expect(res.body.last_used_at).toMatch(ISO);
    });

    it('when the list pages, then every key is seen once', async () => {
      const { caller, keys, keyId } = await tenantWithCaller(svc);
      const ids = [keyId];
      for (let i = 0; i < 4; i++)
        ids.push(
          (await svc.call('POST', keys, { caller, body: { name: `k${i}`, scopes: ['verify'] } })).body.key_id,
        );
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { body: { data: { key_id: string }[]; has_more: boolean; next_cursor: string | null } } =
          await svc.call('GET', `${keys}?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { caller });
        seen.push(...page.body.data.map((k) => k.key_id));
        expect(page.body.has_more).toBe(page.body.next_cursor !== null);
        cursor = page.body.next_cursor;
      } while (cursor);
      expect(seen).toEqual([...ids].reverse());
    });

    it.each([
      ['limit is 0', '?limit=0', 'limit must be at least 1'],
      ['limit is 101', '?limit=101', 'limit must be at most 100'],
      ['the cursor is garbage', '?cursor=nope', 'cursor is invalid'],
      ['a parameter is unknown', '?status=active', 'status is not allowed'],
    ])('when %s, then 400', async (_label, query, message) => {
      const { caller, keys } = await tenantWithCaller(svc);
      expect(await svc.call('GET', `${keys}${query}`, { caller })).toMatchObject({
        status: 400,
        body: { error: 'BAD_REQUEST', message },
      });
    });

    it('when one key is read, then it has the list fields and no secret', async () => {
      const { caller, keys, keyId, secret } = await tenantWithCaller(svc);
      const res = await svc.call('GET', `${keys}/${keyId}`, { caller });
      expect(res).toMatchObject({
        status: 200,
        body: { key_id: keyId, name: 'Initial key', status: 'active', replaces_key_id: null },
      });
      expect(Object.keys(res.body).sort()).toEqual([
        'created_at',
        'grace_ends_at',
        'key_id',
        'last_used_at',
        'name',
        'replaced_by_key_id',
        'replaces_key_id',
        'scopes',
        'status',
      ]);
      expect(JSON.stringify(res.body)).not.toContain(secret);
    });

    it("when another tenant's key or tenant is named, then 404", async () => {
      const a = await tenantWithCaller(svc);
      const b = await tenantWithCaller(svc);
      // b's key through a's own path: absent in a.
      expect(await svc.call('GET', `${a.keys}/${b.keyId}`, { caller: a.caller })).toMatchObject({
        status: 404,
      });
      // b's path with a's credentials.
      expect(await svc.call('GET', `${b.keys}/${b.keyId}`, { caller: a.caller })).toMatchObject({
        status: 404,
      });
      expect(await svc.call('GET', b.keys, { caller: a.caller })).toMatchObject({ status: 404 });
      expect(await svc.call('GET', `${a.keys}/${newId('key')}`, { caller: a.caller })).toMatchObject({
        status: 404,
        body: { error: 'NOT_FOUND', message: 'API key not found' },
      });
    });
  });

  describe('rotate, activate, revoke', () => {
    it('when a key is rotated and the new key activated without grace, then the new key is active and the old one no longer resolves', async () => {
      const { caller, keys, keyId, secret, tenantId } = await tenantWithCaller(svc);

      const rotated = await svc.call('POST', `${keys}/${keyId}/rotate`, { caller });
      expect(rotated).toMatchObject({ status: 201 });
      expect(rotated.body).toEqual({
        key_id: expect.stringMatching(/^key_/),
        api_key: expect.stringMatching(/^msk_[0-9A-Za-z]{43}$/),
        name: 'Initial key',
        scopes: ['mandates:read', 'mandates:write', 'verify', 'events:read', 'tenants:admin'],
        status: 'staging',
        created_at: expect.stringMatching(ISO),
        replaces_key_id: keyId,
      });
      const newId_ = rotated.body.key_id as string;
      const newSecret = rotated.body.api_key as string;
      expect(newSecret).not.toBe(secret);

      // Both work during the overlap.
      expect(await resolve(newSecret, tenantId)).toMatchObject({
        status: 200,
        body: { key_id: newId_, status: 'staging' },
      });
      expect(await resolve(secret, tenantId)).toMatchObject({
        status: 200,
        body: { key_id: keyId, status: 'active' },
      });

      const activated = await svc.call('POST', `${keys}/${newId_}/activate`, {
        caller,
        body: { grace_seconds: 0 },
      });
      expect(activated).toMatchObject({
        status: 200,
        body: { key_id: newId_, status: 'active', replaces_key_id: keyId },
      });
      expect(activated.body).not.toHaveProperty('api_key');

      expect(await svc.call('GET', `${keys}/${keyId}`, { caller })).toMatchObject({
        status: 200,
        body: { status: 'revoked', replaced_by_key_id: newId_, grace_ends_at: null },
      });
      expect(await resolve(secret)).toMatchObject({ status: 404 });
      expect(await resolve(newSecret)).toMatchObject({ status: 200, body: { status: 'active' } });

      const events = svc.publisher.forTenant(tenantId).slice(2);
      expect(events.map((e) => [e.type, e.resource?.id])).toEqual([
        ['API_KEY_ROTATED', newId_],
        ['API_KEY_ACTIVATED', newId_],
        ['API_KEY_REVOKED', keyId],
      ]);
      expect(events[0]!.data).toMatchObject({ key_id: newId_, replaces_key_id: keyId, status: 'staging' });
      expect(events[2]!.data).toMatchObject({ key_id: keyId, status: 'revoked', replaced_by_key_id: newId_ });
    });

    it('when a key that is not staging is activated, then 409', async () => {
      const { caller, keys, keyId } = await tenantWithCaller(svc);
      expect(await svc.call('POST', `${keys}/${keyId}/activate`, { caller })).toMatchObject({
        status: 409,
        body: { error: 'CONFLICT', message: 'API key is not staging' },
      });
      const rotated = await svc.call('POST', `${keys}/${keyId}/rotate`, { caller });
      await svc.call('POST', `${keys}/${rotated.body.key_id}/activate`, { caller });
      expect(await svc.call('POST', `${keys}/${rotated.body.key_id}/activate`, { caller })).toMatchObject({
        status: 409,
      });
    });

    it('when a revoked or staging key is rotated, then 409', async () => {
      const { caller, keys, keyId } = await tenantWithCaller(svc);
      const rotated = await svc.call('POST', `${keys}/${keyId}/rotate`, { caller });
      expect(await svc.call('POST', `${keys}/${rotated.body.key_id}/rotate`, { caller })).toMatchObject({
        status: 409,
        body: { error: 'CONFLICT', message: 'API key is not active' },
      });
      await svc.call('POST', `${keys}/${keyId}/revoke`, { caller });
      expect(await svc.call('POST', `${keys}/${keyId}/rotate`, { caller })).toMatchObject({
        status: 409,
        body: { error: 'CONFLICT', message: 'API key is revoked' },
      });
    });

    it('when a key is revoked, then 200 revoked, it no longer resolves, and a second revoke is 409', async () => {
      const { caller, keys, keyId, secret, tenantId } = await tenantWithCaller(svc);
      const res = await svc.call('POST', `${keys}/${keyId}/revoke`, { caller });
      expect(res).toMatchObject({ status: 200, body: { key_id: keyId, status: 'revoked' } });
      expect(res.body).not.toHaveProperty('api_key');
      expect(await resolve(secret)).toMatchObject({ status: 404, body: { error: 'NOT_FOUND' } });
      expect(await svc.call('POST', `${keys}/${keyId}/revoke`, { caller })).toMatchObject({
        status: 409,
        body: { error: 'CONFLICT', message: 'API key is already revoked' },
      });
      const revoked = svc.publisher.forTenant(tenantId).filter((e) => e.type === 'API_KEY_REVOKED');
      expect(revoked).toHaveLength(1);
      expect(revoked[0]).toMatchObject({
        resource: { type: 'api_key', id: keyId },
        actor: { type: 'api_key', key_id: keyId },
      });
    });

    it('when many revokes of one key race, then exactly one succeeds, the rest are 409, and one API_KEY_REVOKED is recorded', async () => {
      const { caller, keys, tenantId } = await tenantWithCaller(svc);
      const created = await svc.call('POST', keys, { caller, body: { name: 'racing', scopes: ['verify'] } });
      await expectOneOfRacingRevocations(
        svc,
        () => revokeApiKey(svc.deps, tenantId, created.body.key_id, caller),
        {
          tenantId,
          resourceId: created.body.key_id,
          eventType: 'API_KEY_REVOKED',
          alreadyRevoked: 'API key is already revoked',
        },
      );
    });

    it('when a staging key is revoked, then it no longer resolves and can no longer be activated', async () => {
      const { caller, keys, keyId } = await tenantWithCaller(svc);
      const rotated = await svc.call('POST', `${keys}/${keyId}/rotate`, { caller });
      expect(await svc.call('POST', `${keys}/${rotated.body.key_id}/revoke`, { caller })).toMatchObject({
        status: 200,
      });
      expect(await resolve(rotated.body.api_key)).toMatchObject({ status: 404 });
      expect(await svc.call('POST', `${keys}/${rotated.body.key_id}/activate`, { caller })).toMatchObject({
        status: 409,
      });
      expect(await svc.call('GET', `${keys}/${keyId}`, { caller })).toMatchObject({
        body: { status: 'active' },
      });
    });

    it("when another tenant's key is rotated, activated or revoked, then 404 and it is untouched", async () => {
      const a = await tenantWithCaller(svc);
      const b = await tenantWithCaller(svc);
      for (const action of ['rotate', 'activate', 'revoke']) {
        expect(await svc.call('POST', `${a.keys}/${b.keyId}/${action}`, { caller: a.caller })).toMatchObject({
          status: 404,
        });
        expect(await svc.call('POST', `${b.keys}/${b.keyId}/${action}`, { caller: a.caller })).toMatchObject({
          status: 404,
        });
      }
      expect(await resolve(b.secret)).toMatchObject({ status: 200, body: { status: 'active' } });
    });
  });

  describe("POST /internal/v1/keys/resolve-many (the gateway's cache refresh)", () => {
    it("when many keys are resolved at once, then each result stands in its item's place: the key as the single lookup answers it, null for a revoked, unknown or other tenant's key", async () => {
      const { caller, keys, tenantId } = await tenantWithCaller(svc);
      const other = await tenantWithCaller(svc);
      const live = (await svc.call('POST', keys, { caller, body: { name: 'live', scopes: ['verify'] } }))
        .body;
      const revoked = (await svc.call('POST', keys, { caller, body: { name: 'gone', scopes: ['verify'] } }))
        .body;
      expect((await svc.call('POST', `${keys}/${revoked.key_id}/revoke`, { caller })).status).toBe(200);
      const foreign = (
        await svc.call('POST', other.keys, { caller: other.caller, body: { name: 'b', scopes: ['verify'] } })
      ).body;
      const res = await svc.call('POST', '/internal/v1/keys/resolve-many', {
        caller: system,
        body: {
          items: [
            { api_key: revoked.api_key },
            { api_key: live.api_key },
            { api_key: `msk_${'0'.repeat(43)}` },
            { api_key: foreign.api_key, tenant_id: tenantId },
            { api_key: live.api_key, tenant_id: tenantId },
          ],
        },
      });
      expect(res.status).toBe(200);
      const single = (await resolve(live.api_key)).body;
      expect(res.body.results).toEqual([null, single, null, null, single]);
      expect(single).toMatchObject({ key_id: live.key_id, tenant_id: tenantId, scopes: ['verify'] });
    });

    it('when the items are none or more than 100, then 400 and nothing is looked up', async () => {
      for (const items of [[], Array.from({ length: 101 }, () => ({ api_key: 'msk_x' }))])
        expect(
          await svc.call('POST', '/internal/v1/keys/resolve-many', { caller: system, body: { items } }),
        ).toMatchObject({ status: 400, body: { error: 'BAD_REQUEST' } });
    });
  });

  describe('secrets stay secret', () => {
    it('when a whole lifecycle runs, then no secret appears in any published event, list or get', async () => {
      const { caller, keys, keyId, secret, tenantId } = await tenantWithCaller(svc);
      const created = await svc.call('POST', keys, { caller, body: { name: 'ci', scopes: ['verify'] } });
      const rotated = await svc.call('POST', `${keys}/${created.body.key_id}/rotate`, { caller });
      await svc.call('POST', `${keys}/${rotated.body.key_id}/activate`, {
        caller,
        body: { grace_seconds: 0 },
      });
      await svc.call('POST', `${keys}/${keyId}/revoke`, { caller });
      const secrets = [secret, created.body.api_key, rotated.body.api_key] as string[];

      const list = await svc.call('GET', keys, { caller });
      const reads = await Promise.all(
        list.body.data.map((k: { key_id: string }) => svc.call('GET', `${keys}/${k.key_id}`, { caller })),
      );
      const events = svc.publisher.forTenant(tenantId);
      expect(events.map((e) => e.type)).toEqual([
        'TENANT_CREATED',
        'API_KEY_CREATED',
        'API_KEY_CREATED',
        'API_KEY_ROTATED',
        'API_KEY_ACTIVATED',
        'API_KEY_REVOKED',
        'API_KEY_REVOKED',
      ]);
      const exposed = JSON.stringify({ list: list.body, reads: reads.map((r) => r.body), events });
      for (const s of secrets) {
        expect(exposed).not.toContain(s);
        // Nor the part after the prefix, nor a prefix of it that would narrow a search.
        expect(exposed).not.toContain(s.slice(4, 20));
      }
      expect(exposed).not.toMatch(/secret_hash|"api_key":/);
    });
  });
});

describe('identity: rotation limits and staging-key expiry (component)', () => {
  const TTL_MS = 168 * 3_600_000;
  const clock = fixedClock('2031-03-01T10:00:00.000Z');
  const svc = identityForSuite({ clock, stagingKeyTtlMs: TTL_MS });

  async function rotatedTenant() {
    const t = await tenantWithCaller(svc);
    const { caller, keys } = t;
    const rotated = await svc.call('POST', `${keys}/${t.keyId}/rotate`, { caller });
    expect(rotated).toMatchObject({ status: 201 });
    return { ...t, staging: rotated.body as { key_id: string; api_key: string } };
  }

  const resolve = (api_key: string) =>
    svc.call('POST', '/internal/v1/keys/resolve', { caller: system, body: { api_key } });
  const stagingExpiredEvents = (tenantId: string) =>
    svc.publisher
      .forTenant(tenantId)
      .filter((e) => e.type === 'API_KEY_REVOKED' && e.data.reason === 'staging_expired');

  it('when a key with a staging successor is rotated again, then 409 and no second staging key exists', async () => {
    const { caller, keys, keyId, tenantId } = await rotatedTenant();
    expect(await svc.call('POST', `${keys}/${keyId}/rotate`, { caller })).toMatchObject({
      status: 409,
      body: {
        error: 'CONFLICT',
        message: 'API key already has a staging successor; activate or revoke it first',
      },
    });
    const list = await svc.call('GET', keys, { caller });
    expect(list.body.data.filter((k: { status: string }) => k.status === 'staging')).toHaveLength(1);
    expect(svc.publisher.forTenant(tenantId).filter((e) => e.type === 'API_KEY_ROTATED')).toHaveLength(1);
  });

  it('when the staging successor is revoked, then the key may be rotated again', async () => {
    const { caller, keys, keyId, staging } = await rotatedTenant();
    expect((await svc.call('POST', `${keys}/${staging.key_id}/revoke`, { caller })).status).toBe(200);
    expect((await svc.call('POST', `${keys}/${keyId}/rotate`, { caller })).status).toBe(201);
  });

  it('when the staging successor expired but was not swept yet, then rotating again revokes it (announced once) and answers 201', async () => {
    const { caller, keys, keyId, staging, tenantId } = await rotatedTenant();
    clock.advance(TTL_MS);
    const again = await svc.call('POST', `${keys}/${keyId}/rotate`, { caller });
    expect(again).toMatchObject({ status: 201, body: { status: 'staging', replaces_key_id: keyId } });
    expect((await svc.call('GET', `${keys}/${staging.key_id}`, { caller })).body.status).toBe('revoked');
    expect(stagingExpiredEvents(tenantId)).toHaveLength(1);
  });

  it('when many rotations of one key race, then exactly one succeeds and the rest are 409', async () => {
    const t = await svc.createTenant();
    const caller = callerFor(t.tenantId, { actor: { type: 'api_key', key_id: t.keyId } });
    const keys = `/v1/tenants/${t.tenantId}/api-keys`;
    const results = await Promise.all(
      Array.from({ length: 12 }, () => svc.call('POST', `${keys}/${t.keyId}/rotate`, { caller })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, ...Array(11).fill(409)]);
  });

  it('when a staging key outlives STAGING_KEY_TTL_HOURS, then it no longer resolves, is revoked with one API_KEY_REVOKED staging_expired, and cannot be activated', async () => {
    const { caller, keys, staging, tenantId, secret } = await rotatedTenant();
    clock.advance(TTL_MS - 1);
    expect(await resolve(staging.api_key)).toMatchObject({ status: 200 });
    clock.advance(1);
    expect(await resolve(staging.api_key)).toMatchObject({ status: 404 });
    expect(await resolve(staging.api_key)).toMatchObject({ status: 404 });
    expect((await svc.call('GET', `${keys}/${staging.key_id}`, { caller })).body.status).toBe('revoked');
    expect(await svc.call('POST', `${keys}/${staging.key_id}/activate`, { caller })).toMatchObject({
      status: 409,
    });
    const events = stagingExpiredEvents(tenantId);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ resource: { type: 'api_key', id: staging.key_id } });
    // The key it would have replaced keeps working.
    expect(await resolve(secret)).toMatchObject({ status: 200 });
  });

  it('when an expired staging key is activated before anything else saw it, then 409, the old key stays active, and the revocation is announced once', async () => {
    const { caller, keys, keyId, staging, tenantId } = await rotatedTenant();
    clock.advance(TTL_MS);
    expect(await svc.call('POST', `${keys}/${staging.key_id}/activate`, { caller })).toMatchObject({
      status: 409,
      body: { error: 'CONFLICT', message: 'API key is not staging: its activation window expired' },
    });
    expect((await svc.call('GET', `${keys}/${keyId}`, { caller })).body.status).toBe('active');
    // A later sweep finds the key already revoked: no second announcement.
    await expireStagingKeys(svc.deps);
    expect(stagingExpiredEvents(tenantId)).toHaveLength(1);
  });

  it('when the sweeper passes over a staging key nobody used, then it is revoked and announced once; a second pass does nothing', async () => {
    const { caller, keys, staging, tenantId } = await rotatedTenant();
    clock.advance(TTL_MS);
    expect(await expireStagingKeys(svc.deps)).toBeGreaterThanOrEqual(1);
    expect(await expireStagingKeys(svc.deps)).toBe(0);
    expect((await svc.call('GET', `${keys}/${staging.key_id}`, { caller })).body.status).toBe('revoked');
    expect(stagingExpiredEvents(tenantId)).toHaveLength(1);
    expect(await resolve(staging.api_key)).toMatchObject({ status: 404 });
  });
});

describe('identity: the staging-key sweeper (component)', () => {
  it('when the app runs with a sweep interval, then an expired staging key nobody touches is revoked in the background', async () => {
    const clock = fixedClock('2031-03-01T10:00:00.000Z');
    const svc = await startIdentity({ clock, stagingKeyTtlMs: 60_000, stagingSweepIntervalMs: 20 });
    try {
      const { caller, keys, keyId, tenantId } = await tenantWithCaller(svc);
      const staging = (await svc.call('POST', `${keys}/${keyId}/rotate`, { caller })).body.key_id as string;
      clock.advance(60_000);
      const deadline = Date.now() + 10_000;
      let status = 'staging';
      while (status !== 'revoked' && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
        status = (await svc.call('GET', `${keys}/${staging}`, { caller })).body.status;
      }
      expect(status).toBe('revoked');
      expect(
        svc.publisher
          .forTenant(tenantId)
          .filter((e) => e.type === 'API_KEY_REVOKED' && e.data.reason === 'staging_expired'),
      ).toHaveLength(1);
    } finally {
      await svc.stop();
    }
  });
});
