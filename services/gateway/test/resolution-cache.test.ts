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

  it('when a hot entry is in the second half of its TTL, then it is refreshed in the background and never served past its TTL', async () => {
    const cache = new ResolutionCache<string>(500, clock);
    await cache.get('k', async () => 'old');
    now += 300;
    const load = jest.fn(async () => 'new');
    expect(await cache.get('k', load)).toBe('old');
    await new Promise((r) => setImmediate(r));
    expect(load).toHaveBeenCalledTimes(1);
    expect(await cache.get('k', load)).toBe('new');
  });

  it('when a key is used less often than its TTL, then keepWarm refreshes it before it expires so no request waits; a key no request used for two TTLs is forgotten', async () => {
    const cache = new ResolutionCache<{ n: number }>(500, clock);
    // Every answer is a new object numbered by the call that loaded it.
    let loads = 0;
    const load = jest.fn(async (): Promise<{ n: number }> => ({ n: ++loads }));
    await cache.get('k', load);
    // A request every 800 ms (the TTL is 500 ms), keepWarm every 125 ms, as the gateway runs it.
    for (let i = 0; i < 8; i++) {
      for (let step = 0; step < 6; step++) {
        now += 125;
        cache.keepWarm();
        await new Promise((r) => setImmediate(r));
      }
      now += 50;
      const loadedBefore = load.mock.calls.length;
      // Served what was loaded before the request came: it did not wait for a load of its own.
      expect((await cache.get('k', load))!.n).toBeLessThanOrEqual(loadedBefore);
    }
    // Idle: refreshed no more once two TTLs have passed since the last use, then forgotten.
    const refreshes = load.mock.calls.length;
    for (let step = 0; step < 20; step++) {
      now += 125;
      cache.keepWarm();
      await new Promise((r) => setImmediate(r));
    }
    expect(load.mock.calls.length - refreshes).toBeLessThanOrEqual(3);
    const loadedBefore = load.mock.calls.length;
    expect((await cache.get('k', load))!.n).toBe(loadedBefore + 1);
  });
});
