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
});
