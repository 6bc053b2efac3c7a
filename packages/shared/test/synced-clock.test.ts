import { createLogger } from '../src/observability/logger';
import { SyncedClock, redisTime, type TimeSource } from '../src/data/synced-clock';

const silent = createLogger('test', 'silent');

/** A host's clock the test moves by hand; `reads` answers like a source whose clock is `ahead` of it. */
function host(start: number) {
  let t = start;
  return {
    local: () => t,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

describe('SyncedClock (docs/DECISIONS.md, "Time")', () => {
  it('when the source is 5 s ahead of this host, then now() reads the source time after a sync, and the local time before it', async () => {
    const h = host(1_000_000);
    const clock = new SyncedClock(async () => h.local() + 5_000, silent, { local: h.local });
    expect(clock.now().getTime()).toBe(1_000_000);
    expect(await clock.sync()).toEqual({ offsetMs: 5_000, rttMs: 0 });
    h.advance(1_234);
    expect(clock.now().getTime()).toBe(1_000_000 + 1_234 + 5_000);
  });

  it('when two hosts 10 s apart sync to one source, then both read the same time', async () => {
    let real = 2_000_000;
    const source: TimeSource = async () => real;
    const ahead = new SyncedClock(source, silent, { local: () => real + 5_000 });
    const behind = new SyncedClock(source, silent, { local: () => real - 5_000 });
    await Promise.all([ahead.sync(), behind.sync()]);
    real += 777;
    expect(ahead.now().getTime()).toBe(real);
    expect(behind.now().getTime()).toBe(real);
  });

  it('when the readings of a sync have different round trips, then the offset comes from the shortest one (off by at most half of it)', async () => {
    const h = host(0);
    // [before the read, after it]: the source reads its time (this host's + 5 s) in between.
    const delays = [
      [0, 300],
      [20, 20],
      [250, 0],
    ];
    let i = 0;
    const clock = new SyncedClock(
      async () => {
        const [before, after] = delays[i++]!;
        h.advance(before!);
        const remote = h.local() + 5_000;
        h.advance(after!);
        return remote;
      },
      silent,
      { local: h.local, samples: 3 },
    );
    expect(await clock.sync()).toEqual({ offsetMs: 5_000, rttMs: 40 });
  });

  it('when the best round trip of a sync is over maxRttMs, then it is not used and the offset stays', async () => {
    const h = host(0);
    let slowMs = 0;
    const clock = new SyncedClock(
      async () => {
        const remote = h.local() + 7_000;
        h.advance(slowMs);
        return remote;
      },
      silent,
      { local: h.local, samples: 2, maxRttMs: 500 },
    );
    await clock.sync();
    slowMs = 501;
    await expect(clock.sync()).rejects.toThrow('best round trip 501 ms is over 500 ms');
    expect(clock.synced).toEqual({ offsetMs: 7_000, rttMs: 0 });
  });

  it('when a sync fails, then it throws and the offset of the last one stays', async () => {
    const h = host(0);
    let fail = false;
    const clock = new SyncedClock(
      async () => {
        if (fail) throw new Error('redis away');
        return h.local() - 3_000;
      },
      silent,
      { local: h.local, samples: 1 },
    );
    await clock.sync();
    fail = true;
    await expect(clock.sync()).rejects.toThrow('redis away');
    expect(clock.now().getTime()).toBe(-3_000);
    expect(clock.synced).toEqual({ offsetMs: -3_000, rttMs: 0 });
  });

  it('when Redis cannot be read at start, then the clock starts on the local time and a later sync moves it', async () => {
    const h = host(10_000);
    let away = true;
    const clock = new SyncedClock(
      async () => {
        if (away) throw new Error('redis away');
        return h.local() + 2_000;
      },
      silent,
      { local: h.local, samples: 1, intervalMs: 60_000 },
    );
    await clock.start('test decides');
    try {
      expect(clock.now().getTime()).toBe(10_000);
      expect(clock.synced).toBeUndefined();
      away = false;
      await clock.sync();
      expect(clock.now().getTime()).toBe(12_000);
    } finally {
      await clock.stop();
    }
  });

  it("redisTime reads TIME's seconds and microseconds as epoch milliseconds", async () => {
    expect(await redisTime({ time: async () => ['1700000000', '123456'] })).toBe(1_700_000_000_123.456);
  });
});
