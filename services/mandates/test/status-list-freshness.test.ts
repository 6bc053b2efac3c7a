import { decodeJwt } from 'jose';
import { fixedClock, newId } from '@mandate/shared/core';
import { callService, callerFor } from '@mandate/shared/testing';
import { mandateStoreAdapters, mandatesForSuite } from './support';

/**
 * docs/VERIFY-AT-THE-EDGE.md#online-or-offline: an offline decision is stale by at most ttl, so a
 * served list's exp is at most iat + ttl, and no cache is told to keep it past its exp.
 */
describe.each(mandateStoreAdapters())('status list freshness (v4, $name store)', (adapter) => {
  const clock = fixedClock('2031-03-01T10:00:00.000Z');
  const svc = mandatesForSuite({ clock }, adapter);

  const fetchList = async (uri: string) => {
    clock.advance(1_001); // past the replica's one-second reuse of a rendering
    const res = await callService(svc.url, 'GET', new URL(uri).pathname, { caller: callerFor('tnt_public') });
    expect(res.status).toBe(200);
    const claims = decodeJwt(res.body as string) as { iat: number; exp: number; ttl: number };
    const maxAge = Number(/max-age=(\d+)/.exec(res.headers.get('cache-control') ?? '')?.[1]);
    return { claims, maxAge, now: Math.floor(clock.now().getTime() / 1000) };
  };

  it('when a list is served at any moment, then exp ≤ iat + ttl, and max-age neither passes exp nor ttl', async () => {
    const created = await svc.call(newId('tnt'), 'POST', '/v1/mandates', {
      principal: 'alice',
      delegate: 'bot',
    });
    expect(created.status).toBe(201);
    const uri = created.body.status.status_list.uri as string;
    for (let step = 0; step < 8; step++) {
      const { claims, maxAge, now } = await fetchList(uri);
      expect(claims.exp - claims.iat).toBeLessThanOrEqual(claims.ttl);
      expect(claims.exp).toBeGreaterThan(now);
      expect(maxAge).toBeGreaterThan(0);
      expect(maxAge).toBeLessThanOrEqual(Math.min(claims.ttl, claims.exp - now));
      clock.advance(17_000);
    }
  });
});
