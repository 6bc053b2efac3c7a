import { deflateSync } from 'node:zlib';
import { CompactSign, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import { OfflineVerifier, verifyOffline } from '../src';

/**
 * docs/API.md#verify-input-rules and docs/VERIFY-AT-THE-EDGE.md#what-the-verifier-refuses: what
 * online verify answers 400 the verifier refuses (throws, naming the member); a mandate of
 * another tenant is refused.
 */
const URI = 'https://mandates.example/v1/status-lists/sl_1';
const NOW = new Date('2031-01-01T00:00:00.000Z');
const nowSeconds = Math.floor(NOW.getTime() / 1000);
const TENANT = 'tnt_a';

const sign = (key: CryptoKey, payload: unknown, typ?: string) =>
  new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg: 'ES256', kid: 'k1', ...(typ ? { typ } : {}) })
    .sign(key);

describe('@mandate/verifier refuses what online verify refuses', () => {
  let key: CryptoKey;
  let jwk: JWK;
  let jws: string;
  let statusList: string;

  beforeAll(async () => {
    const pair = await generateKeyPair('ES256', { extractable: true });
    key = pair.privateKey;
    jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    jws = await sign(key, {
      id: 'mdt_1',
      tenant_id: TENANT,
      principal: { type: 'user', id: 'alice' },
      delegate: { id: 'bot' },
      scope: { actions: ['payments:*'], resources: ['acct:123/*'] },
      valid_from: null,
      expires_at: null,
      status: { status_list: { idx: 0, uri: URI } },
    });
    statusList = await sign(
      key,
      {
        sub: URI,
        iat: nowSeconds,
        exp: nowSeconds + 60,
        ttl: 60,
        status_list: { bits: 2, lst: deflateSync(Buffer.alloc(1)).toString('base64url') },
      },
      'statuslist+jwt',
    );
  });

  const verifier = () => new OfflineVerifier({ jwks: { keys: [jwk] } });
  const decide = (
    request: Record<string, unknown>,
    expected: { tenant_id: string; principal_id?: string } = { tenant_id: TENANT },
  ) => verifier().verify({ jws, request: request as never, statusList, now: NOW, ...expected });

  it('when the resource is a plain one under the pattern, then ALLOW', async () => {
    await expect(
      decide({ action: 'payments:create', resource: 'acct:123/invoices/2026.11' }),
    ).resolves.toEqual({
      decision: 'ALLOW',
      reason: 'OK',
    });
  });

  it.each([
    'acct:123/../999',
    'acct:123/%2e%2e/999',
    'acct:123/./x',
    'acct:123/．．/999',
    'acct:123/\uFE52\uFE52/999',
    'acct:123/\u2025/999',
    'acct:123/\u2024./999',
    'acct:123/..／999',
    'acct:123/％2e％2e/999',
  ])(
    'when the resource is %j (a dot segment, in any spelling), then it throws naming resource, never ALLOW',
    async (resource) => {
      await expect(decide({ action: 'payments:create', resource })).rejects.toMatchObject({
        code: 'REQUEST_INVALID',
        field: 'resource',
      });
    },
  );

  it.each([
    ['resource', 'acct:123/\u0000'],
    ['resource', 'acct:123/x\ny'],
    ['resource', 'acct:123/\u202Egnp.exe'],
    ['resource', 'acct:123/\u2066x'],
    ['resource', 'acct:123/\u0085'],
    ['action', 'payments:create\u0000'],
    ['action', 'payments:\u202Ecreate'],
    ['action', 'payments:create\r\n'],
  ])('when %s holds a control or bidi character (%j), then it throws naming it', async (field, value) => {
    await expect(
      decide({ action: 'payments:create', resource: 'acct:123/1', [field]: value }),
    ).rejects.toMatchObject({
      code: 'REQUEST_INVALID',
      field,
    });
  });

  it('when the request is otherwise malformed (no action, a fractional amount, a lowercase currency, an unknown member), then it throws', async () => {
    for (const [request, field] of [
      [{}, 'action'],
      [{ action: '' }, 'action'],
      [{ action: 'payments:create', amount: 1.5 }, 'amount'],
      [{ action: 'payments:create', currency: 'eur' }, 'currency'],
      [{ action: 'payments:create', min_assurance: 'MEDIUM' }, 'min_assurance'],
      [{ action: 'payments:create', extra: 1 }, 'extra'],
    ] as const) {
      await expect(decide(request)).rejects.toMatchObject({ code: 'REQUEST_INVALID', field });
    }
  });

  it("when the mandate is another tenant's, then it throws MANDATE_TENANT_MISMATCH, never ALLOW", async () => {
    await expect(
      decide({ action: 'payments:create', resource: 'acct:123/1' }, { tenant_id: 'tnt_b' }),
    ).rejects.toMatchObject({ code: 'MANDATE_TENANT_MISMATCH' });
    await expect(
      verifyOffline({
        jws,
        request: { action: 'payments:create', resource: 'acct:123/1' },
        jwks: { keys: [jwk] },
        statusList,
        now: NOW,
        tenant_id: 'tnt_b',
      }),
    ).rejects.toMatchObject({ code: 'MANDATE_TENANT_MISMATCH' });
  });

  it('when a principal id is expected and the mandate names another, then it throws MANDATE_PRINCIPAL_MISMATCH', async () => {
    const request = { action: 'payments:create', resource: 'acct:123/1' };
    await expect(decide(request, { tenant_id: TENANT, principal_id: 'alice' })).resolves.toMatchObject({
      decision: 'ALLOW',
    });
    await expect(decide(request, { tenant_id: TENANT, principal_id: 'mallory' })).rejects.toMatchObject({
      code: 'MANDATE_PRINCIPAL_MISMATCH',
    });
  });

  it('when the tenant is left out, then it does not compile, and at run time it throws', async () => {
    const v = verifier();
    const request = { action: 'payments:create', resource: 'acct:123/1' };
    // @ts-expect-error tenant_id is required: forgetting it does not compile.
    await expect(v.verify({ jws, request, statusList, now: NOW })).rejects.toMatchObject({
      code: 'MANDATE_TENANT_MISMATCH',
    });
    const jwks = { keys: [jwk] };
    // @ts-expect-error tenant_id is required by the one-call form too.
    const oneCall = verifyOffline({ jws, request, jwks, statusList, now: NOW });
    await expect(oneCall).rejects.toMatchObject({ code: 'MANDATE_TENANT_MISMATCH' });
  });
});

describe('@mandate/verifier: offline staleness is at most ttl (docs/VERIFY-AT-THE-EDGE.md#online-or-offline)', () => {
  let key: CryptoKey;
  let jwk: JWK;
  let jws: string;
  beforeAll(async () => {
    const pair = await generateKeyPair('ES256', { extractable: true });
    key = pair.privateKey;
    jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    jws = await sign(key, {
      id: 'mdt_1',
      tenant_id: TENANT,
      delegate: { id: 'bot' },
      scope: { actions: ['payments:*'] },
      status: { status_list: { idx: 0, uri: URI } },
    });
  });
  const listIssued = (iat: number, exp: number) =>
    sign(
      key,
      {
        sub: URI,
        iat,
        exp,
        ttl: 60,
        status_list: { bits: 2, lst: deflateSync(Buffer.alloc(1)).toString('base64url') },
      },
      'statuslist+jwt',
    );
  const decideWith = (statusList: string) =>
    new OfflineVerifier({ jwks: { keys: [jwk] } }).verify({
      jws,
      request: { action: 'payments:create' },
      statusList,
      now: NOW,
      tenant_id: TENANT,
    });

  it('when a list is older than its ttl (by iat, 5 s skew allowed), then it throws STATUS_LIST_STALE even before its exp', async () => {
    // The review's case: a list of exp = iat + 2 × ttl, 61 s and 90 s after it was issued.
    for (const age of [66, 90, 119]) {
      await expect(
        decideWith(await listIssued(nowSeconds - age, nowSeconds - age + 120)),
      ).rejects.toMatchObject({
        code: 'STATUS_LIST_STALE',
      });
    }
    for (const age of [0, 60, 65]) {
      await expect(decideWith(await listIssued(nowSeconds - age, nowSeconds - age + 120))).resolves.toEqual({
        decision: 'ALLOW',
        reason: 'OK',
      });
    }
  });

  it('when a fetched list goes stale in the cache, then it is fetched again rather than refused', async () => {
    let served = 0;
    const fetch = async () => {
      served++;
      const token = await listIssued(
        nowSeconds + (served === 1 ? 0 : 100),
        nowSeconds + (served === 1 ? 60 : 160),
      );
      return {
        status: 200,
        headers: { get: (name: string) => (name.toLowerCase() === 'cache-control' ? 'max-age=600' : null) },
        text: async () => token,
        json: async () => token,
      };
    };
    const v = new OfflineVerifier({ jwks: { keys: [jwk] }, fetch });
    const at = (s: number) => new Date(NOW.getTime() + s * 1000);
    const request = { action: 'payments:create' };
    await expect(v.verify({ jws, request, now: at(0), tenant_id: TENANT })).resolves.toMatchObject({
      decision: 'ALLOW',
    });
    await expect(v.verify({ jws, request, now: at(100), tenant_id: TENANT })).resolves.toMatchObject({
      decision: 'ALLOW',
    });
    expect(served).toBe(2);
  });
});
