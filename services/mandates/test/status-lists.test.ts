import { inflateSync } from 'node:zlib';
import { compactVerify, createLocalJWKSet, decodeJwt, decodeProtectedHeader } from 'jose';
import { getListFromStatusListJWT } from '@sd-jwt/jwt-status-list';
import { fixedClock, newId } from '@mandate/shared/core';
import { callService, callerFor } from '@mandate/shared/testing';
import { mandateStoreAdapters, mandatesForSuite } from './support';

/** The draft's bit order with node:zlib alone: entry i in byte i >> 2, bits 2 * (i % 4), LSB first. */
function statusAt(lst: string, idx: number): number {
  const bytes = inflateSync(Buffer.from(lst, 'base64url'));
  return (bytes[idx >> 2]! >> ((idx & 3) * 2)) & 0b11;
}

describe.each(mandateStoreAdapters())(
  'mandate status lists (docs/DECISIONS.md, "Status lists (v3)", $name store)',
  (adapter) => {
    const clock = fixedClock('2031-03-01T10:00:00.000Z');
    const svc = mandatesForSuite({ clock }, adapter);
    const { call } = svc;
    /** The public route, as the gateway forwards it (an internal token, If-None-Match). */
    const fetchList = async (path: string, headers: Record<string, string> = {}) => {
      const res = await callService(svc.url, 'GET', path, { caller: callerFor('tnt_public'), headers });
      return {
        status: res.status,
        headers: res.headers,
        text: async () =>
          res.body === undefined ? '' : typeof res.body === 'string' ? res.body : JSON.stringify(res.body),
        json: async () => res.body,
      };
    };
    const pathOf = (uri: string) => new URL(uri).pathname;

    /** Past the replica's one-second reuse of a rendering, as a new fetch after a lifecycle call would be. */
    const later = () => clock.advance(1_001);

    async function listFor(mandate: { status: { status_list: { uri: string } } }) {
      later();
      const res = await fetchList(pathOf(mandate.status.status_list.uri));
      expect(res.status).toBe(200);
      return { res, token: await res.text() };
    }

    it('when a mandate is created, then its signed payload carries status.status_list {idx, uri} and the body shows it', async () => {
      const tenantId = newId('tnt');
      const created = await call(tenantId, 'POST', '/v1/mandates', { principal: 'alice', delegate: 'bot' });
      expect(created.status).toBe(201);
      const { status } = created.body;
      expect(status).toEqual({
        status_list: {
          idx: expect.any(Number),
          uri: expect.stringMatching(/^http:\/\/127\.0\.0\.1:8080\/v1\/status-lists\/sl_\d+$/),
        },
      });
      const jwks = createLocalJWKSet({ keys: await svc.deps.signer.publicJwks() });
      const { payload } = await compactVerify(created.body.signature.jws, jwks);
      expect(JSON.parse(new TextDecoder().decode(payload)).status).toEqual(status);

      const second = await call(tenantId, 'POST', '/v1/mandates', { principal: 'alice', delegate: 'bot' });
      expect(second.body.status.status_list.idx).not.toBe(status.status_list.idx);
    });

    it('when the list is fetched, then it is a signed statuslist+jwt for its own uri with ttl, Cache-Control and an ETag answering 304', async () => {
      const tenantId = newId('tnt');
      const created = await call(tenantId, 'POST', '/v1/mandates', { principal: 'alice', delegate: 'bot' });
      const { uri, idx } = created.body.status.status_list;
      const { res, token } = await listFor(created.body);
      expect(res.headers.get('content-type')).toMatch(/^application\/statuslist\+jwt/);
      expect(res.headers.get('cache-control')).toBe('public, max-age=60');
      const etag = res.headers.get('etag');
      expect(etag).toMatch(/^"[^"]+"$/);
      expect(decodeProtectedHeader(token)).toMatchObject({
        alg: 'ES256',
        typ: 'statuslist+jwt',
        kid: svc.deps.signer.kid,
      });
      const jwks = createLocalJWKSet({ keys: await svc.deps.signer.publicJwks() });
      await expect(compactVerify(token, jwks)).resolves.toBeDefined();
      const claims = decodeJwt(token) as any;
      expect(claims).toMatchObject({ sub: uri, ttl: 60, status_list: { bits: 2 } });
      expect(claims.exp).toBeGreaterThan(claims.iat);
      expect(statusAt(claims.status_list.lst, idx)).toBe(0);

      const revalidated = await fetchList(pathOf(uri), { 'If-None-Match': etag! });
      expect(revalidated.status).toBe(304);
      expect(await revalidated.text()).toBe('');
      expect(revalidated.headers.get('etag')).toBe(etag);
    });

    it('when a list is served, then it holds all 100,000 entries of 2 bits (a list closes at 100,000), whatever how few are used', async () => {
      const created = await call(newId('tnt'), 'POST', '/v1/mandates', {
        principal: 'alice',
        delegate: 'bot',
      });
      const { token } = await listFor(created.body);
      const claims = decodeJwt(token) as any;
      expect(inflateSync(Buffer.from(claims.status_list.lst, 'base64url')).length).toBe(100_000 / 4);
      // The independent decoder reads the same size: entry 99,999 exists, 100,000 does not.
      const list = getListFromStatusListJWT(token);
      expect(list.getStatus(99_999)).toBe(0);
      expect(() => list.getStatus(100_000)).toThrow();
      const listId = new URL(created.body.status.status_list.uri).pathname.split('/').pop()!;
      expect(await svc.deps.store.getStatusList(listId)).toMatchObject({ capacity: 100_000 });
    });

    it('when a list that was never opened is asked for, then 404 in the envelope', async () => {
      for (const id of ['sl_999999', 'nope']) {
        const res = await fetchList(`/v1/status-lists/${id}`);
        expect(res.status).toBe(404);
        expect(await res.json()).toEqual({ error: 'NOT_FOUND', message: expect.any(String) });
      }
    });

    it('when a mandate is suspended, reactivated, revoked, or expires, then the next fetched list shows it (two independent decoders agree)', async () => {
      const tenantId = newId('tnt');
      const expiresAt = new Date(clock.now().getTime() + 3_600_000).toISOString();
      const a = (await call(tenantId, 'POST', '/v1/mandates', { principal: 'p', delegate: 'd' })).body;
      const b = (
        await call(tenantId, 'POST', '/v1/mandates', { principal: 'p', delegate: 'd', expires_at: expiresAt })
      ).body;
      const expectStatus = async (mandate: any, expected: number) => {
        const { token } = await listFor(mandate);
        const claims = decodeJwt(token) as any;
        const idx = mandate.status.status_list.idx;
        expect(statusAt(claims.status_list.lst, idx)).toBe(expected);
        expect(getListFromStatusListJWT(token).getStatus(idx)).toBe(expected);
      };
      const events = () => svc.publisher.events.filter((e) => e.type === 'STATUS_LIST_PUBLISHED');

      await expectStatus(a, 0);
      const published = events().length;
      await expectStatus(a, 0);
      // Unchanged content: nothing new published.
      expect(events().length).toBe(published);

      await call(tenantId, 'POST', `/v1/mandates/${a.id}/suspend`, {});
      await expectStatus(a, 2);
      expect(events().length).toBe(published + 1);
      expect(events().at(-1)).toMatchObject({
        tenant_id: null,
        resource: { type: 'status_list', id: a.status.status_list.uri.split('/').pop() },
      });
      await call(tenantId, 'POST', `/v1/mandates/${a.id}/reactivate`, {});
      await expectStatus(a, 0);
      await call(tenantId, 'POST', `/v1/mandates/${a.id}/revoke`, {});
      await expectStatus(a, 1);

      await expectStatus(b, 0);
      clock.set(new Date(Date.parse(expiresAt) + 1));
      // Expired the moment expires_at passed, swept or not.
      await expectStatus(b, 1);
    });
  },
);
