import { createECDH, createHmac, randomBytes } from 'node:crypto';
import { digest, ES256, generateSalt } from '@sd-jwt/crypto-nodejs';
import { createHeaderAndPayload, StatusList } from '@sd-jwt/jwt-status-list';
import { SDJwtVcInstance, type SdJwtVcPayload } from '@sd-jwt/sd-jwt-vc';
import type { DisclosureFrame } from '@sd-jwt/types';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
import { PID_VCT } from '@mandate/identity';

/**
 * A TEST PID provider: its own ES256 key, made at start, never persisted. Embedded mode and the
 * tests trust it; production never does (identity's `testIssuerTrust`). The `.invalid` TLD
 * (RFC 2606) makes it obvious in any log that a credential came from here.
 */
export const TEST_PID_ISSUER_URL = 'https://test-pid-issuer.invalid';
const STATUS_LIST_SIZE = 1024;

export interface PersonData {
  family_name: string;
  given_name: string;
  birth_date: string;
  /** Not asked by the verifier: present so tests prove it stays undisclosed. */
  nationalities?: string[];
  birth_place?: string;
}

export interface IssueOptions {
  holderJwk: JWK;
  person?: Partial<PersonData>;
  /** Seconds since the epoch; defaults to now. */
  iat?: number;
  exp?: number;
  nbf?: number;
  vct?: string;
  /** Adds a status list reference at this index. */
  statusIndex?: number;
}

export interface TestPidIssuer {
  issuer: string;
  kid: string;
  publicJwk: JWK;
  /** The WALLET_TRUSTED_ISSUERS entry that trusts this issuer. */
  trustEntry: { issuer: string; jwks: { keys: (JWK & { kty: string })[] } };
  statusListUri: string;
  /** A PID SD-JWT VC (compact, ending with `~`, no key binding). */
  issue(options: IssueOptions): Promise<string>;
  revoke(statusIndex: number): void;
  /** The signed status list token (typ statuslist+jwt) as served at statusListUri. */
  statusListJwt(): Promise<string>;
}

export const DEFAULT_PERSON: PersonData = {
  family_name: 'Mustermann',
  given_name: 'Erika',
  birth_date: '1984-01-26',
  nationalities: ['DE'],
  birth_place: 'Berlin',
};

/**
 * The seed the test wallet CLI and the tests issue with, so that a wallet in another process holds
 * PIDs the launchers' identity trusts (identity knows the public half of its key,
 * TEST_PID_ISSUER_TRUST). Its key is public knowledge by design: one more reason a TEST issuer is
 * never trusted in production.
 */
export const DEFAULT_TEST_ISSUER_SEED = 'mandate-service TEST PID issuer';

export interface TestPidIssuerOptions {
  issuer?: string;
  /** Derives the key from this seed (same seed, same key); without one the key is random. */
  seed?: string;
  /** Signs with this P-256 key instead (a test CA's leaf, say). */
  privateJwk?: JWK;
  /** The issuer's certificate chain (base64 DER, leaf first), sent in the x5c header of what it signs. */
  x5c?: string[];
}

export async function createTestPidIssuer(options: TestPidIssuerOptions = {}): Promise<TestPidIssuer> {
  const issuer = options.issuer ?? TEST_PID_ISSUER_URL;
  const { privateJwk, publicJwk, kid } = await issuerKey(options);
  const x5cHeader = options.x5c ? { x5c: options.x5c } : {};
  const sdjwt = new SDJwtVcInstance({
    signer: await ES256.getSigner(privateJwk),
    signAlg: 'ES256',
    hasher: digest,
    hashAlg: 'sha-256',
    saltGenerator: generateSalt,
  });
  const statusListUri = `${issuer}/status-lists/1`;
  const statuses = new StatusList(new Array<number>(STATUS_LIST_SIZE).fill(0), 1);

  return {
    issuer,
    kid,
    publicJwk,
    trustEntry: { issuer, jwks: { keys: [publicJwk as JWK & { kty: string }] } },
    statusListUri,
    async issue(options) {
      const now = Math.floor(Date.now() / 1000);
      const person = { ...DEFAULT_PERSON, ...options.person };
      const iat = options.iat ?? now;
      const payload: SdJwtVcPayload & PersonData = {
        iss: issuer,
        vct: options.vct ?? PID_VCT,
        iat,
        exp: options.exp ?? iat + 365 * 24 * 3600,
        ...(options.nbf !== undefined ? { nbf: options.nbf } : {}),
        cnf: { jwk: options.holderJwk },
        ...(options.statusIndex !== undefined
          ? { status: { status_list: { idx: options.statusIndex, uri: statusListUri } } }
          : {}),
        ...person,
      };
      const disclosable = Object.keys(person) as (keyof PersonData)[];
      const frame = { _sd: disclosable } as unknown as DisclosureFrame<typeof payload>;
      return sdjwt.issue(payload, frame, { header: { kid, ...x5cHeader } });
    },
    revoke(statusIndex) {
      statuses.setStatus(statusIndex, 1);
    },
    async statusListJwt() {
      const now = Math.floor(Date.now() / 1000);
      const { header, payload } = createHeaderAndPayload(
        statuses,
        { iss: issuer, sub: statusListUri, iat: now, exp: now + 3600 },
        { alg: 'ES256', typ: 'statuslist+jwt', kid, ...x5cHeader } as Parameters<
          typeof createHeaderAndPayload
        >[2],
      );
      return new SignJWT(payload as Record<string, unknown>)
        .setProtectedHeader(header as { alg: string })
        .sign(await importJWK(privateJwk, 'ES256'));
    },
  };
}

/** The issuer's P-256 key (given, seeded or random) and its public half, named by its thumbprint. */
async function issuerKey(
  options: TestPidIssuerOptions,
): Promise<{ privateJwk: JWK; publicJwk: JWK; kid: string }> {
  const privateJwk =
    options.privateJwk ?? (options.seed !== undefined ? seededP256Jwk(options.seed) : await randomP256Jwk());
  const { kty, crv, x, y } = privateJwk;
  const publicJwk: JWK = { kty, crv, x, y };
  const kid = await calculateJwkThumbprint(publicJwk);
  publicJwk.kid = kid;
  publicJwk.alg = 'ES256';
  return { privateJwk, publicJwk, kid };
}

async function randomP256Jwk(): Promise<JWK> {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  return exportJWK(privateKey);
}

/** A P-256 private key whose scalar is HMAC-SHA256(seed) (below the group order but for ~2^-32). */
function seededP256Jwk(seed: string): JWK {
  const d = createHmac('sha256', 'test-pid-issuer').update(seed).digest();
  const ecdh = createECDH('prime256v1');
  ecdh.setPrivateKey(d);
  const point = ecdh.getPublicKey(); // 0x04 || x || y
  return {
    kty: 'EC',
    crv: 'P-256',
    x: point.subarray(1, 33).toString('base64url'),
    y: point.subarray(33, 65).toString('base64url'),
    d: d.toString('base64url'),
  };
}

/** A fresh random holder key pair, as a wallet would keep in its secure element. */
export async function createHolderKey(): Promise<{ publicJwk: JWK; privateJwk: JWK }> {
  const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
  return { publicJwk: await exportJWK(publicKey), privateJwk: await exportJWK(privateKey) };
}

/** Random personal data, so tests do not all share one person. */
export function randomPerson(): PersonData {
  return { ...DEFAULT_PERSON, family_name: `Test-${randomBytes(4).toString('hex')}` };
}
