import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AppError } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { CredentialChangeFeed } from '../src/credential-changes/feed';
import { MemoryCredentialChangeStore } from '../src/credential-changes/memory-credential-change-store';

const silent = createLogger('credential-feed-test', 'silent');
const TICK_MS = 50;

/** Counts the epoch reads: the feed's whole cost to the store. */
class CountingStore extends MemoryCredentialChangeStore {
  reads = 0;
  override since(since?: number) {
    this.reads++;
    return super.since(since);
  }
}

/**
 * docs/DECISIONS.md, "Credential changes": identity's credential feed over real HTTP. One epoch
 * read per tick whatever the number of gateways holding it, a change written at once, a feed
 * ended when its caller's token runs out and when identity stops.
 */
describe('identity: the credential feed', () => {
  let store: CountingStore;
  let feed: CredentialChangeFeed;
  let server: Server;
  let base: string;
  let expiresAt: number;

  beforeEach(async () => {
    store = new CountingStore();
    feed = new CredentialChangeFeed(store, TICK_MS, silent);
    expiresAt = Date.now() + 60_000;
    server = createServer((req, res) => {
      const since = new URL(req.url!, 'http://x').searchParams.get('since');
      try {
        feed.serve(res, since === null ? undefined : Number(since), expiresAt);
      } catch (err) {
        // identity's error middleware in the service: the status is what the test reads.
        res.writeHead((err as AppError).status).end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    feed.start();
  });

  afterEach(async () => {
    await feed.stop();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /** Opens a feed; its lines as they arrive, and whether it ended. */
  function open(since?: number) {
    const lines: { epoch: number; changes: unknown[] | null; at: number }[] = [];
    const state = { ended: false, res: undefined as IncomingMessage | undefined };
    const req = request(`${base}/feed${since === undefined ? '' : `?since=${since}`}`, (res) => {
      state.res = res;
      let pending = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        pending += chunk;
        for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
          lines.push(JSON.parse(pending.slice(0, nl)));
          pending = pending.slice(nl + 1);
        }
      });
      res.on('end', () => (state.ended = true));
    });
    req.end();
    return { lines, state, close: () => req.destroy() };
  }

  const until = async (what: () => boolean, ms = 5_000) => {
    const end = Date.now() + ms;
    while (!what()) {
      if (Date.now() > end) throw new Error('timed out');
      await new Promise((r) => setTimeout(r, 5));
    }
  };

  it('when several gateways hold the feed, then each tick reads the epoch once for all of them', async () => {
    await store.record([{ kind: 'api_key', tenant_id: 't1', id: 'k1' }]);
    const gateways = [open(1), open(1), open(1)];
    await until(() => gateways.every((g) => g.lines.length >= 1));
    const readsBefore = store.reads;
    const linesBefore = gateways.map((g) => g.lines.length);
    await new Promise((r) => setTimeout(r, 20 * TICK_MS));
    const ticks = Math.min(...gateways.map((g, i) => g.lines.length - linesBefore[i]!));
    expect(ticks).toBeGreaterThanOrEqual(10);
    // One read per tick, not one per gateway per tick (a tick's reads may straddle the windows).
    expect(store.reads - readsBefore).toBeLessThanOrEqual(ticks + 2);
    for (const g of gateways) expect(g.lines.at(-1)).toMatchObject({ epoch: 1, changes: [] });
    for (const g of gateways) g.close();
  });

  it('when a change is recorded here, then every feed carries it before the next tick', async () => {
    const slow = new CredentialChangeFeed(store, 60_000, silent);
    server.removeAllListeners('request');
    server.on('request', (_req, res) => slow.serve(res, 0, expiresAt));
    slow.start();
    try {
      const gateways = [open(0), open(0)];
      await until(() => gateways.every((g) => g.lines.length >= 1));
      for (const g of gateways) expect(g.lines.at(-1)).toMatchObject({ epoch: 0, changes: [] });
      await store.record([{ kind: 'api_key', tenant_id: 't1', id: 'k9' }]);
      slow.changed();
      // The tick is a minute away: only the change itself can have written this line.
      await until(() => gateways.every((g) => g.lines.at(-1)!.epoch === 1), 1_000);
      for (const g of gateways)
        expect(g.lines.at(-1)).toMatchObject({
          epoch: 1,
          changes: [{ kind: 'api_key', tenant_id: 't1', id: 'k9' }],
        });
      for (const g of gateways) g.close();
    } finally {
      await slow.stop();
    }
  });

  it('when another identity replica records a change, then the next tick carries it (the epoch is read from the store)', async () => {
    const g = open(0);
    await until(() => g.lines.length >= 1);
    // Written to the shared store by another replica: this one is not told.
    await store.record([{ kind: 'subject', tenant_id: 't2', id: 'dashboard:someone' }]);
    const recordedAt = Date.now();
    await until(() => g.lines.at(-1)!.epoch === 1);
    expect(Date.now() - recordedAt).toBeLessThan(TICK_MS + 200);
    expect(g.lines.at(-1)).toMatchObject({
      changes: [{ kind: 'subject', tenant_id: 't2', id: 'dashboard:someone' }],
    });
    g.close();
  });

  it('when a gateway knows no epoch or one too old, then its first line says to drop everything', async () => {
    const fresh = open();
    await until(() => fresh.lines.length >= 1);
    expect(fresh.lines[0]).toMatchObject({ epoch: 0, changes: null });
    const ahead = open(7);
    await until(() => ahead.lines.length >= 1);
    expect(ahead.lines[0]).toMatchObject({ epoch: 0, changes: null });
    fresh.close();
    ahead.close();
  });

  it("when the caller's token runs out, then its feed ends (the gateway opens another with a new one)", async () => {
    expiresAt = Date.now() + 3 * TICK_MS;
    const g = open(0);
    await until(() => g.state.ended);
    expect(g.lines.length).toBeGreaterThanOrEqual(1);
    expect(feed.size).toBe(0);
  });

  it('when identity stops, then every feed ends at once and a new one is refused 503 (the server does not wait for them)', async () => {
    const gateways = [open(0), open(0)];
    await until(() => gateways.every((g) => g.lines.length >= 1));
    await feed.stop();
    await until(() => gateways.every((g) => g.state.ended), 1_000);
    expect(feed.size).toBe(0);
    const late = open(0);
    await until(() => late.state.ended);
    expect(late.state.res?.statusCode).toBe(503);
    expect(feed.size).toBe(0);
  });

  it('when a gateway goes away, then its feed is forgotten', async () => {
    const g = open(0);
    await until(() => g.lines.length >= 1);
    expect(feed.size).toBe(1);
    g.close();
    await until(() => feed.size === 0);
  });
});
