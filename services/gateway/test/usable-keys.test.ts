import pino from 'pino';
import { UsableKeys, hashPrefixOf, type UsableKeysSource } from '../src/auth/usable-keys';

type UsableKey = Awaited<ReturnType<UsableKeysSource>>['keys'][number];

/**
 * The gateway's list of usable keys (docs/DECISIONS.md, "Authentication") over a fake identity:
 * what it reads when, and what a change of a key does to it.
 */
const silent = pino({ level: 'silent' });

function fakeIdentity() {
  const keys = new Map<string, UsableKey & { usable: boolean }>();
  const queries: Parameters<UsableKeysSource>[0][] = [];
  let failing = false;
  const source: UsableKeysSource = async (query) => {
    queries.push(query);
    if (failing) throw new Error('identity is down');
    const all = [...keys.values()].filter((k) => k.usable);
    const listed =
      'keys' in query
        ? all.filter((k) => query.keys.some((q) => q.key_id === k.key_id && q.tenant_id === k.tenant_id))
        : all.filter((k) => k.created_at >= (query.created_since ?? ''));
    return {
      as_of: new Date(Date.now() - 5_000).toISOString(),
      keys: listed.map(({ usable: _usable, ...k }) => k),
    };
  };
  return {
    source,
    queries,
    create(secret: string, tenant = 'tnt_a') {
      const key_id = `key_${keys.size + 1}`;
      keys.set(key_id, {
        tenant_id: tenant,
        key_id,
        created_at: new Date().toISOString(),
        hash_prefix: hashPrefixOf(secret),
        usable: true,
      });
      return key_id;
    },
    revoke(keyId: string) {
      keys.get(keyId)!.usable = false;
    },
    fail(on: boolean) {
      failing = on;
    },
  };
}

describe('the list of usable keys a blocked address passes by', () => {
  it('when many requests with unknown keys arrive together, then one catch-up serves them all, and a key created before them is found', async () => {
    const identity = fakeIdentity();
    const list = new UsableKeys(identity.source, silent, Date.now, 50);
    await list.refresh();
    identity.create('msk_new');
    const reads = identity.queries.length;
    const answers = await Promise.all([
      list.admits('msk_new'),
      ...Array.from({ length: 20 }, (_, i) => list.admits(`msk_guess_${i}`)),
    ]);
    expect(answers).toEqual([true, ...Array(20).fill(false)]);
    expect(identity.queries.length).toBe(reads + 1);
    // From the last read's as_of on, not the whole list again.
    expect(identity.queries.at(-1)).toMatchObject({ created_since: expect.any(String) });
  });

  it('when a listed key is revoked, then the change drops it and it is not listed again; a rotated key still usable is listed again', async () => {
    const identity = fakeIdentity();
    const list = new UsableKeys(identity.source, silent, Date.now, 50);
    const revokedId = identity.create('msk_revoked');
    const rotatedId = identity.create('msk_rotated');
    await list.refresh();
    expect(list.size).toBe(2);
    identity.revoke(revokedId);
    list.drop([
      { kind: 'api_key', tenant_id: 'tnt_a', id: revokedId },
      { kind: 'api_key', tenant_id: 'tnt_a', id: rotatedId },
    ]);
    await list.settled();
    expect(list.size).toBe(1);
    expect(await list.admits('msk_rotated')).toBe(true);
    expect(await list.admits('msk_revoked')).toBe(false);
  });

  it('when the changes are not known (null) or a whole tenant changed, then the next read is the whole list again', async () => {
    const identity = fakeIdentity();
    const list = new UsableKeys(identity.source, silent, Date.now, 50);
    const id = identity.create('msk_one');
    await list.refresh();
    identity.revoke(id);
    list.drop(null);
    await list.admits('msk_unknown');
    expect(identity.queries.at(-1)).toEqual({ limit: expect.any(Number) });
    expect(await list.admits('msk_one')).toBe(false);
  });

  it('when identity cannot answer, then an unknown key is not admitted and the request does not wait for more than the one failed read', async () => {
    const identity = fakeIdentity();
    const list = new UsableKeys(identity.source, silent, Date.now, 50);
    identity.fail(true);
    const started = Date.now();
    expect(await list.admits('msk_any')).toBe(false);
    expect(Date.now() - started).toBeLessThan(1_000);
    identity.fail(false);
    identity.create('msk_any');
    expect(await list.admits('msk_any')).toBe(true);
  });
});
