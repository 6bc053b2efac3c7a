import { deflateSync } from 'node:zlib';
import { CompactSign, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import { OfflineVerifier, verifyOffline } from '../src';

const URI = 'https://mandates.example/v1/status-lists/sl_1';
const NOW = new Date('2031-01-01T00:00:00.000Z');
const nowSeconds = Math.floor(NOW.getTime() / 1000);
const TENANT = 'tnt_1';

async function keyPair(kid: string): Promise<{ key: CryptoKey; jwk: JWK }> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  return { key: privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } };
}

const sign = (key: CryptoKey, kid: string, payload: unknown, typ?: string) =>
  new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg: 'ES256', kid, ...(typ ? { typ } : {}) })
    .sign(key);

/** A list with the given statuses at indexes 0.. (2 bits each, least significant first). */
function lst(statuses: number[]): string {
  const bytes = Buffer.alloc(Math.ceil(statuses.length / 4) + 1);
  statuses.forEach((s, i) => (bytes[i >> 2]! |= s << ((i & 3) * 2)));
  return deflateSync(bytes).toString('base64url');
}

describe('@mandate/verifier', () => {
  let good: { key: CryptoKey; jwk: JWK };
  let other: { key: CryptoKey; jwk: JWK };
  const mandate = (idx: number, extra: Record<string, unknown> = {}) => ({
    id: 'mdt_1',
    tenant_id: TENANT,
    delegate: { id: 'bot' },
    scope: { actions: ['payments:*'] },
    valid_from: null,
    expires_at: null,
    status: { status_list: { idx, uri: URI } },
    ...extra,
  });
  const list = (statuses: number[], claims: Record<string, unknown> = {}, typ = 'statuslist+jwt') =>
    sign(
      good.key,
      'k1',
      {
        sub: URI,
        iat: nowSeconds,
        exp: nowSeconds + 120,
        ttl: 60,
        status_list: { bits: 2, lst: lst(statuses) },
        ...claims,
      },
      typ,
    );

  beforeAll(async () => {
    good = await keyPair('k1');
    other = await keyPair('k1');
  });

  const verifier = () => new OfflineVerifier({ jwks: { keys: [good.jwk] } });
  const request = { action: 'payments:create' };

  it('when the list says VALID, SUSPENDED or INVALID, then ALLOW, MANDATE_SUSPENDED or MANDATE_REVOKED', async () => {
    const v = verifier();
    const statusList = await list([0, 2, 1]);
    const answers = [];
    for (const idx of [0, 1, 2]) {
      answers.push(
        await v.verify({
          tenant_id: TENANT,
          jws: await sign(good.key, 'k1', mandate(idx)),
          request,
          statusList,
          now: NOW,
        }),
      );
    }
    expect(answers).toEqual([
      { decision: 'ALLOW', reason: 'OK' },
      { decision: 'DENY', reason: 'MANDATE_SUSPENDED' },
      { decision: 'DENY', reason: 'MANDATE_REVOKED' },
    ]);
  });

  it('when the mandate is past expires_at, then MANDATE_EXPIRED whatever the list says', async () => {
    const jws = await sign(good.key, 'k1', mandate(1, { expires_at: '2030-12-31T00:00:00.000Z' }));
    await expect(
      verifier().verify({ tenant_id: TENANT, jws, request, statusList: await list([0, 1]), now: NOW }),
    ).resolves.toEqual({
      decision: 'DENY',
      reason: 'MANDATE_EXPIRED',
    });
  });

  it('when anything is in doubt, then it throws naming why, never ALLOW', async () => {
    const jws = await sign(good.key, 'k1', mandate(0));
    const statusList = await list([0]);
    const cases: [string, () => Promise<unknown>][] = [
      [
        'MANDATE_SIGNATURE_INVALID',
        async () =>
          verifier().verify({
            tenant_id: TENANT,
            jws: await sign(other.key, 'k1', mandate(0)),
            request,
            statusList,
            now: NOW,
          }),
      ],
      [
        'MANDATE_SIGNATURE_INVALID',
        async () =>
          verifier().verify({
            tenant_id: TENANT,
            jws: await sign(good.key, 'unknown', mandate(0)),
            request,
            statusList,
            now: NOW,
          }),
      ],
      [
        'NO_STATUS_CLAIM',
        async () =>
          verifier().verify({
            tenant_id: TENANT,
            jws: await sign(good.key, 'k1', mandate(0, { status: undefined })),
            request,
            statusList,
            now: NOW,
          }),
      ],
      [
        'STATUS_LIST_INVALID',
        async () =>
          verifier().verify({
            tenant_id: TENANT,
            jws,
            request,
            statusList: await sign(other.key, 'k1', { sub: URI }, 'statuslist+jwt'),
            now: NOW,
          }),
      ],
      [
        'STATUS_LIST_INVALID',
        async () =>
          verifier().verify({
            tenant_id: TENANT,
            jws,
            request,
            statusList: await list([0], {}, 'JWT'),
            now: NOW,
          }),
      ],
      [
        'STATUS_LIST_SUBJECT_MISMATCH',
        async () =>
          verifier().verify({
            tenant_id: TENANT,
            jws,
            request,
            statusList: await list([0], { sub: `${URI}0` }),
            now: NOW,
          }),
      ],
      [
        'STATUS_LIST_EXPIRED',
        async () =>
          verifier().verify({
            tenant_id: TENANT,
            jws,
            request,
            statusList: await list([0], { exp: nowSeconds }),
            now: NOW,
          }),
      ],
      // A list passed off as a mandate.
      [
        'MANDATE_SIGNATURE_INVALID',
        async () => verifier().verify({ tenant_id: TENANT, jws: statusList, request, statusList, now: NOW }),
      ],
    ];
    for (const [code, answer] of cases) await expect(answer()).rejects.toMatchObject({ code });
  });

  it('when the list is fetched, then it is kept for max-age and revalidated with If-None-Match', async () => {
    const token = await list([2]);
    const seen: (string | undefined)[] = [];
    const fetch = async (_url: string, init?: { headers?: Record<string, string> }) => {
      seen.push(init?.headers?.['If-None-Match']);
      const notModified = init?.headers?.['If-None-Match'] === '"e1"';
      return {
        status: notModified ? 304 : 200,
        headers: {
          get: (n: string) =>
            ({ etag: '"e1"', 'cache-control': 'public, max-age=60' })[n.toLowerCase()] ?? null,
        },
        text: async () => (notModified ? '' : token),
        json: async () => ({}),
      };
    };
    const jwks = { keys: [good.jwk] };
    const jws = await sign(good.key, 'k1', mandate(0));
    const at = (s: number) => new Date(NOW.getTime() + s * 1000);
    for (const s of [0, 30, 61]) {
      await expect(
        verifyOffline({ tenant_id: TENANT, jws, request, jwks, fetch, now: at(s) }),
      ).resolves.toEqual({
        decision: 'DENY',
        reason: 'MANDATE_SUSPENDED',
      });
    }
    expect(seen).toEqual([undefined, '"e1"']);
  });
  describe("the JWKS from jwksUri (the edge guide's form)", () => {
    const JWKS_URI = 'https://mandates.example/v1/.well-known/jwks.json';
    /** A JWKS endpoint whose key set a test changes, answering Cache-Control max-age=300 and an ETag. */
    function jwksEndpoint(initial: JWK[]) {
      let keys = initial;
      const asked: (string | undefined)[] = [];
      const tag = () => `"${keys.map((k) => k.x).join('.')}"`;
      const fetch = async (url: string, init?: { headers?: Record<string, string> }) => {
        if (url !== JWKS_URI) throw new Error(`unexpected fetch of ${url}`);
        const ifNoneMatch = init?.headers?.['If-None-Match'];
        asked.push(ifNoneMatch);
        const notModified = ifNoneMatch === tag();
        const body = JSON.stringify({ keys });
        return {
          status: notModified ? 304 : 200,
          headers: {
            get: (n: string) =>
              ({ etag: tag(), 'cache-control': 'public, max-age=300' })[n.toLowerCase()] ?? null,
          },
          text: async () => (notModified ? '' : body),
          json: async () => JSON.parse(body) as unknown,
        };
      };
      return { fetch, asked, setKeys: (next: JWK[]) => (keys = next) };
    }
    const at = (s: number) => new Date(NOW.getTime() + s * 1000);
    /** A list valid for an hour, so that only the key set's age is under test. */
    const longList = () => list([0], { exp: nowSeconds + 3600, ttl: 3600 });

    it('when the key set is fetched, then it is kept for its max-age, then revalidated with If-None-Match', async () => {
      const endpoint = jwksEndpoint([good.jwk]);
      const v = new OfflineVerifier({ jwksUri: JWKS_URI, fetch: endpoint.fetch });
      const jws = await sign(good.key, 'k1', mandate(0));
      const statusList = await longList();
      for (const s of [0, 100, 299, 301])
        await expect(v.verify({ tenant_id: TENANT, jws, request, statusList, now: at(s) })).resolves.toEqual({
          decision: 'ALLOW',
          reason: 'OK',
        });
      expect(endpoint.asked).toEqual([undefined, `"${good.jwk.x}"`]);
    });

    it('when the service withdraws a key, then mandates and lists it signed stop verifying once the max-age has passed, never ALLOW', async () => {
      const endpoint = jwksEndpoint([good.jwk]);
      const v = new OfflineVerifier({ jwksUri: JWKS_URI, fetch: endpoint.fetch });
      const jws = await sign(good.key, 'k1', mandate(0));
      const statusList = await longList();
      await expect(
        v.verify({ tenant_id: TENANT, jws, request, statusList, now: at(0) }),
      ).resolves.toMatchObject({
        decision: 'ALLOW',
      });
      const successor = await keyPair('k2');
      endpoint.setKeys([successor.jwk]);
      // Within the max-age the cached set still holds: staleness is bounded, not zero.
      await expect(
        v.verify({ tenant_id: TENANT, jws, request, statusList, now: at(200) }),
      ).resolves.toMatchObject({
        decision: 'ALLOW',
      });
      await expect(
        v.verify({ tenant_id: TENANT, jws, request, statusList, now: at(301) }),
      ).rejects.toMatchObject({
        code: 'MANDATE_SIGNATURE_INVALID',
      });
    });

    it('when a mandate names a kid the cached set lacks (a rotated key), then the set is fetched again at once and the mandate verifies', async () => {
      const successor = await keyPair('k2');
      const endpoint = jwksEndpoint([good.jwk]);
      const v = new OfflineVerifier({ jwksUri: JWKS_URI, fetch: endpoint.fetch });
      const statusList = await longList();
      await v.verify({
        tenant_id: TENANT,
        jws: await sign(good.key, 'k1', mandate(0)),
        request,
        statusList,
        now: at(0),
      });
      endpoint.setKeys([good.jwk, successor.jwk]);
      const rotated = await sign(successor.key, 'k2', mandate(0));
      await expect(
        v.verify({ tenant_id: TENANT, jws: rotated, request, statusList, now: at(1) }),
      ).resolves.toEqual({
        decision: 'ALLOW',
        reason: 'OK',
      });
      expect(endpoint.asked).toHaveLength(2);
    });

    it('when the JWKS cannot be fetched, then it throws, never ALLOW', async () => {
      const v = new OfflineVerifier({
        jwksUri: JWKS_URI,
        fetch: async () => {
          throw new Error('connection refused');
        },
      });
      await expect(
        v.verify({
          tenant_id: TENANT,
          jws: await sign(good.key, 'k1', mandate(0)),
          request,
          statusList: await longList(),
          now: at(0),
        }),
      ).rejects.toMatchObject({ code: 'STATUS_LIST_UNAVAILABLE' });
    });
  });
});
