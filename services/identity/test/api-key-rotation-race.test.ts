import { rotateApiKey, revokeApiKey } from '../src/api-keys/api-keys';
import { KeyTransitionNotAllowed } from '../src/api-keys/api-key';
import { identityForSuite, identityStoreAdapters, operator } from './helpers';

/**
 * Rotating a key while it is being revoked (issue 22, item 12c): the rotation read the key ACTIVE,
 * the revocation then completed, and only then did the rotation write its successor. A revoked
 * key must not leave a usable successor behind, whatever the interleaving.
 */
describe.each(identityStoreAdapters())('API key rotation racing a revocation ($name store)', (adapter) => {
  const svc = identityForSuite({}, adapter);

  it('when the key is revoked between the rotation reading it and writing its successor, then the rotation is 409 and no successor of the revoked key is usable', async () => {
    const { tenantId, keyId } = await svc.createTenant();
    const apiKeys = svc.deps.store.apiKeys;
    const insert = apiKeys.insert;
    // The revocation lands after the rotation's read, just before its insert.
    apiKeys.insert = async (...args: Parameters<typeof insert>) => {
      apiKeys.insert = insert;
      await revokeApiKey(svc.deps, tenantId, keyId, operator);
      return insert.apply(apiKeys, args);
    };

    const rotation = await rotateApiKey(svc.deps, tenantId, keyId, operator).then(
      (issued) => issued.key,
      (err: unknown) => err,
    );

    expect(rotation).toBeInstanceOf(KeyTransitionNotAllowed);
    expect((rotation as Error).message).toBe('API key is revoked');
    const keys = await apiKeys.list(tenantId, { limit: 10 });
    expect(keys.map((k) => [k.replaces_key_id === keyId ? 'successor' : 'key', k.status])).toEqual(
      expect.arrayContaining([['key', 'revoked']]),
    );
    expect(keys.filter((k) => k.status !== 'revoked')).toEqual([]);
  });

  it('when the key is revoked after the rotation has written its successor, then the successor stays (rotation, then revocation, as called one after the other)', async () => {
    const { tenantId, keyId } = await svc.createTenant();
    const issued = await rotateApiKey(svc.deps, tenantId, keyId, operator);
    await revokeApiKey(svc.deps, tenantId, keyId, operator);
    const successor = await svc.deps.store.apiKeys.get(tenantId, issued.key.key_id);
    expect(successor?.status).toBe('staging');
  });
});
