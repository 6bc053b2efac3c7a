import { deflateSync } from 'node:zlib';
import fc from 'fast-check';
import { CompactSign, exportJWK, generateKeyPair } from 'jose';
import { AppError } from '@mandate/shared/core';
import { OfflineVerificationError, OfflineVerifier, type OfflineRequest } from '@mandate/verifier';
import { parseVerifyRequest } from '@mandate/verify/testing';

/**
 * docs/API.md#verify-input-rules: one validator online and offline. The same generated requests,
 * hostile ones included, go to POST /v1/verify's parser (in-process: what the route answers 400 is
 * what it throws) and to the offline verifier; a 400 online is a throw offline naming the same
 * member, and a request online accepts is decided offline.
 */
const URI = 'https://mandates.example/v1/status-lists/sl_1';
const NOW = new Date('2031-01-01T00:00:00.000Z');
const TENANT = 'tnt_a';
const ID = 'mdt_01jz8y7x6w5v4t3s2r1q0p9n8m';

describe('verify input: online ≡ offline (property)', () => {
  let verifier: OfflineVerifier;
  let jws: string;
  let statusList: string;

  beforeAll(async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const sign = (payload: unknown, typ?: string) =>
      new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
        .setProtectedHeader({ alg: 'ES256', kid: 'k1', ...(typ ? { typ } : {}) })
        .sign(privateKey);
    verifier = new OfflineVerifier({
      jwks: { keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }] },
    });
    jws = await sign({
      id: ID,
      tenant_id: TENANT,
      principal: { type: 'user', id: 'alice' },
      delegate: { id: 'bot' },
      scope: { actions: ['payments:*'], resources: ['acct:123/*'] },
      valid_from: null,
      expires_at: null,
      status: { status_list: { idx: 0, uri: URI } },
    });
    const iat = Math.floor(NOW.getTime() / 1000);
    statusList = await sign(
      {
        sub: URI,
        iat,
        exp: iat + 60,
        ttl: 60,
        status_list: { bits: 2, lst: deflateSync(Buffer.alloc(1)).toString('base64url') },
      },
      'statuslist+jwt',
    );
  });

  /** Pieces a hostile resource is made of: dots in every spelling, separators, controls, bidi, look-alikes. */
  const piece = fc.constantFrom(
    'acct:123',
    '/',
    '\\',
    '.',
    '..',
    '999',
    'x',
    '%2e',
    '%2E',
    '%2f',
    '%5c',
    '%',
    '2e',
    '\uFF0E',
    '\uFE52',
    '\u2024',
    '\u2025',
    '\u2026',
    '\uFF0F',
    '\uFF3C',
    '\uFF05',
    '\u3002',
    '\uFF61',
    '\u0000',
    '\n',
    '\r',
    '\t',
    '\u007F',
    '\u0085',
    '\u009B',
    '\u200B',
    '\u200E',
    '\u202A',
    '\u202E',
    '\u2066',
    '\u2069',
    '\u2028',
    '\uFEFF',
    '\uD800',
    '\uE000',
    'é',
    'e\u0301',
    '😀',
    ' ',
    '*',
    ':',
  );
  const hostile = fc.array(piece, { maxLength: 8 }).map((parts) => parts.join(''));
  const text = fc.oneof(hostile, fc.string({ maxLength: 12, unit: 'binary' }), fc.string({ maxLength: 12 }));
  /** Mostly a valid value, so that one bad member at a time is what decides. */
  const mostly = <T, U>(valid: fc.Arbitrary<T>, bad: fc.Arbitrary<U>) =>
    fc.oneof({ arbitrary: valid, weight: 4 }, { arbitrary: bad, weight: 1 });
  const requestArb = fc
    .record(
      {
        action: mostly(
          fc.constantFrom('payments:create', 'reports:read', 'payments:*'),
          fc.oneof(text, fc.constantFrom('', 'a'.repeat(201)), fc.integer()),
        ),
        // The resource is the member under attack: hostile nearly as often as not.
        resource: fc.oneof(
          {
            arbitrary: fc.constantFrom('acct:123/1', 'acct:123/invoices/2026.11', 'acct:999', 'acct:123/ünï'),
            weight: 3,
          },
          { arbitrary: hostile, weight: 2 },
          { arbitrary: text, weight: 1 },
          { arbitrary: fc.constantFrom('r'.repeat(1025), null), weight: 1 },
        ),
        amount: mostly(
          fc.integer({ min: 0, max: 2000 }),
          fc.oneof(fc.integer({ min: -5, max: -1 }), fc.double(), fc.constantFrom(2 ** 60, '12')),
        ),
        currency: mostly(fc.constantFrom('EUR', 'USD'), fc.constantFrom('eur', 'EU', '', 'EURO', 1)),
        delegate_id: mostly(fc.constantFrom('bot', ''), fc.oneof(text, fc.constant('d'.repeat(257)))),
        min_assurance: mostly(
          fc.constantFrom('LOW', 'SUBSTANTIAL', 'HIGH'),
          fc.constantFrom('MEDIUM', 'low', null),
        ),
        // An unknown member, now and then.
        extra: fc.constantFrom(
          undefined,
          undefined,
          undefined,
          undefined,
          undefined,
          undefined,
          undefined,
          undefined,
          undefined,
          1,
        ),
      },
      { requiredKeys: ['action', 'extra'] },
    )
    .map(({ extra, ...request }) => (extra === undefined ? request : { ...request, extra }));

  /** The member a 400 names: its message is "<member> …". */
  const memberOf = (message: string) => /^([a-z_]+)/.exec(message)?.[1];

  it('when the same requests go online and offline, then a 400 online is a throw offline naming the same member (10,000 runs)', async () => {
    let refused = 0;
    let resourceRefused = 0;
    const started = Date.now();
    await fc.assert(
      fc.asyncProperty(requestArb, async (request) => {
        // 'OK', the member a refusal names, or what else happened (which fails the comparison).
        let online: string;
        try {
          parseVerifyRequest({ mandate_id: ID, ...request });
          online = 'OK';
        } catch (err) {
          online =
            err instanceof AppError && err.code === 'BAD_REQUEST'
              ? `400 ${memberOf(err.message)}`
              : `unexpected ${String(err)}`;
        }
        let offline: string;
        try {
          await verifier.verify({
            jws,
            request: request as OfflineRequest,
            statusList,
            now: NOW,
            tenant_id: TENANT,
          });
          offline = 'OK';
        } catch (err) {
          offline =
            err instanceof OfflineVerificationError && err.code === 'REQUEST_INVALID'
              ? `400 ${err.field}`
              : `unexpected ${String(err)}`;
        }
        if (online !== 'OK') refused++;
        if (online === '400 resource') resourceRefused++;
        expect(offline).toBe(online);
      }),
      { numRuns: 10_000 },
    );
    // The generated requests are not all refused, nor all accepted.
    console.log(
      `verify input property: 10,000 requests, ${refused} refused both ways (${resourceRefused} for their resource), ${Date.now() - started} ms`,
    );
    expect(refused).toBeGreaterThan(1_000);
    expect(refused).toBeLessThan(9_000);
    expect(resourceRefused).toBeGreaterThan(500);
  }, 120_000);
});
