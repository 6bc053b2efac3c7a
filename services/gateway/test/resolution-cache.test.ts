import { ResolutionCache } from '../src/auth/resolution-cache';

describe('ResolutionCache', () => {
  let now = 0;
  const clock = () => now;
  beforeEach(() => {
    now = 1_000;
  });

  it('when an entry is within its TTL, then it is served without loading again; after the TTL it is loaded anew', async () => {
    const cache = new ResolutionCache<string>(500, clock);
    const load = jest.fn(async () => 'v1');
    expect(await cache.get('k', load)).toBe('v1');
    now += 100;
    expect(await cache.get('k', load)).toBe('v1');
    expect(load).toHaveBeenCalledTimes(1);
    now += 500;
    load.mockResolvedValueOnce('v2');
    expect(await cache.get('k', load)).toBe('v2');
    expect(load).toHaveBeenCalledTimes(2);
  });

  it('when many requests miss the same key at once, then one load serves them all', async () => {
    const cache = new ResolutionCache<string>(500, clock);
    let release!: (v: string) => void;
    const load = jest.fn(() => new Promise<string>((r) => (release = r)));
    const all = Promise.all([cache.get('k', load), cache.get('k', load), cache.get('k', load)]);
    release('v');
    expect(await all).toEqual(['v', 'v', 'v']);
    expect(load).toHaveBeenCalledTimes(1);
  });

  it('when an eviction lands while a load is under way, then that answer is not cached and later requests load again', async () => {
    const cache = new ResolutionCache<string>(500, clock);
    let release!: (v: string) => void;
    const first = cache.get('k', () => new Promise<string>((r) => (release = r)));
    cache.evictWhere(() => true);
    release('revoked-soon');
    expect(await first).toBe('revoked-soon');
    const load = jest.fn(async () => null);
    expect(await cache.get('k', load)).toBeNull();
    expect(load).toHaveBeenCalledTimes(1);
  });

  it('when no check vouches for a hot entry, then in the last quarter of its TTL it is refreshed in the background and never served past its TTL', async () => {
    const cache = new ResolutionCache<string>(500, clock);
    await cache.get('k', async () => 'old');
    now += 400;
    const load = jest.fn(async () => 'new');
    expect(await cache.get('k', load)).toBe('old');
    await new Promise((r) => setImmediate(r));
    expect(load).toHaveBeenCalledTimes(1);
    expect(await cache.get('k', load)).toBe('new');
  });

  it('when epoch checks keep vouching for the cache, then the keys in use are never loaded again, however long they are used', async () => {
    const cache = new ResolutionCache<string>(500, clock);
    const load = jest.fn(async () => 'v');
    for (let n = 0; n < 2_000; n++) await cache.get(`k${n}`, load);
    expect(load).toHaveBeenCalledTimes(2_000);
    // A minute of checks every 250 ms, every key used in between.
    for (let tick = 0; tick < 240; tick++) {
      cache.vouch(now);
      now += 250;
      for (let n = 0; n < 2_000; n += 97) expect(await cache.get(`k${n}`, load)).toBe('v');
    }
    expect(load).toHaveBeenCalledTimes(2_000);
    expect(cache.size).toBe(2_000);
  });

  it('when the checks stop, then vouched entries run out one TTL after the last check began; misses are never vouched for', async () => {
    const cache = new ResolutionCache<string>(500, clock);
    await cache.get('hit', async () => 'v');
    await cache.get('miss', async () => null);
    now += 400;
    cache.vouch(now);
    now += 300;
    const load = jest.fn(async () => 'fresh');
    expect(await cache.get('hit', load)).toBe('v');
    // 700 ms after its load: the miss ran out at 500.
    expect(await cache.get('miss', load)).toBe('fresh');
    expect(load).toHaveBeenCalledTimes(1);
    now += 201;
    expect(await cache.get('hit', load)).toBe('fresh');
  });

  it('when a check began before a load, then it does not vouch for that load beyond its own TTL', async () => {
    const cache = new ResolutionCache<string>(500, clock);
    cache.vouch(now);
    now += 100;
    await cache.get('k', async () => 'v');
    now += 499;
    expect(await cache.get('k', async () => 'again')).toBe('v');
    now += 2;
    expect(await cache.get('k', async () => 'again')).toBe('again');
  });

  it("when an answer has a time after which it must not be used (a staging key's window), then it is loaded again from then on, even while vouched for", async () => {
    const cache = new ResolutionCache<{ until: number }>(500, clock, undefined, (v) => v.until);
    await cache.get('k', async () => ({ until: now + 1_000 }));
    const load = jest.fn(async () => null);
    for (let tick = 0; tick < 3; tick++) {
      now += 300;
      cache.vouch(now);
      expect(await cache.get('k', load)).not.toBeNull();
    }
    now += 100;
    cache.vouch(now);
    expect(await cache.get('k', load)).toBeNull();
    expect(load).toHaveBeenCalledTimes(1);
  });

  it('when the cache is full, then the oldest entry makes room, not the whole cache', async () => {
    const cache = new ResolutionCache<string>(500, clock, 3);
    for (const k of ['a', 'b', 'c', 'd']) await cache.get(k, async () => k);
    expect(cache.size).toBe(3);
    const load = jest.fn(async () => 'again');
    expect(await cache.get('d', load)).toBe('d');
    expect(await cache.get('b', load)).toBe('b');
    expect(await cache.get('a', load)).toBe('again');
  });

  it('when an entry was not used for the idle time, then forgetUnused drops it and keeps the others', async () => {
    const cache = new ResolutionCache<string>(500, clock);
    await cache.get('idle', async () => 'i');
    now += 1_000;
    await cache.get('busy', async () => 'b');
    cache.forgetUnused(500);
    expect(cache.size).toBe(1);
  });
});
