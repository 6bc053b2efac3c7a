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

  it('when many keys are in use and loadMany is given, then keepWarm refreshes them all in one call per tick, never one call per key, and requests never wait', async () => {
    let refreshes = 0;
    const loadMany = jest.fn(async (items: number[]): Promise<string[]> => {
      refreshes++;
      return items.map((n) => `v${n}:${refreshes}`);
    });
    const cache = new ResolutionCache<string, number>(500, clock, undefined, 125, loadMany);
    const single = jest.fn(async () => 'loaded alone');
    const keys = Array.from({ length: 40 }, (_, n) => n);
    for (const n of keys) await cache.get(`k${n}`, single, n);
    expect(single).toHaveBeenCalledTimes(40);
    for (let tick = 0; tick < 16; tick++) {
      now += 125;
      cache.keepWarm();
      await new Promise((r) => setImmediate(r));
      // Each key keeps being used, so each stays warm.
      for (const n of keys)
        expect(await cache.get(`k${n}`, single, n)).toMatch(new RegExp(`^(loaded alone|v${n}:\\d+)$`));
    }
    expect(single).toHaveBeenCalledTimes(40);
    // Over 2 s with a 500 ms TTL, each key was refreshed about every 250–375 ms, all in the same calls.
    expect(loadMany.mock.calls.length).toBeGreaterThanOrEqual(5);
    expect(loadMany.mock.calls.length).toBeLessThanOrEqual(9);
    for (const [items] of loadMany.mock.calls) expect([...items].sort((a, b) => a - b)).toEqual(keys);
    expect(await cache.get('k7', single, 7)).toBe(`v7:${loadMany.mock.calls.length}`);
  });

  it('when an eviction lands during a many-key refresh, then none of its answers is cached', async () => {
    let release!: (v: string[]) => void;
    const loadMany = jest.fn((items: number[]) =>
      new Promise<string[]>((r) => (release = r)).then((v) => v.slice(0, items.length)),
    );
    const cache = new ResolutionCache<string, number>(500, clock, undefined, 125, loadMany);
    await cache.get('a', async () => 'a-old', 1);
    await cache.get('b', async () => 'b-old', 2);
    now += 300;
    cache.keepWarm();
    expect(loadMany).toHaveBeenCalledTimes(1);
    cache.evictWhere((key) => key === 'a');
    release(['a-revoked', 'b-new']);
    await new Promise((r) => setImmediate(r));
    const load = jest.fn(async () => null);
    expect(await cache.get('a', load, 1)).toBeNull();
    expect(load).toHaveBeenCalledTimes(1);
    // b was not refreshed either (its answer came from the same call): still the old one within its TTL.
    expect(await cache.get('b', load, 2)).toBe('b-old');
  });

  it('when a many-key refresh fails, then the entries are served until their TTL and then loaded alone', async () => {
    const loadMany = jest.fn(async (): Promise<string[]> => {
      throw new Error('identity down');
    });
    const cache = new ResolutionCache<string, number>(500, clock, undefined, 125, loadMany);
    await cache.get('a', async () => 'a-old', 1);
    now += 300;
    cache.keepWarm();
    await new Promise((r) => setImmediate(r));
    expect(await cache.get('a', async () => 'never', 1)).toBe('a-old');
    now += 250;
    expect(await cache.get('a', async () => 'a-new', 1)).toBe('a-new');
  });
});
