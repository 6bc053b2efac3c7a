import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { canonicalJson } from '@mandate/shared/core';
import { digest } from '@sd-jwt/crypto-nodejs';
import { decodeSdJwt, getClaims, type DecodedSDJwt } from '@sd-jwt/decode';
import { getListFromStatusListJWT } from '@sd-jwt/jwt-status-list';
import { DcqlPresentationResult, DcqlQuery } from 'dcql';
import { compactVerify, decodeJwt, decodeProtectedHeader, importJWK, type JWK } from 'jose';
import {
  PID_FORMAT,
  PID_QUERY_ID,
  PID_VCT,
  pidDcqlQuery,
  REQUESTED_CLAIMS,
  type PidClaims,
} from './pid-query';
import type { PRESENTATION_FAILURE_REASONS } from '../contract/wire';
import { resolveIssuerKey, UntrustedIssuerError, type TrustedIssuerEntry } from './trusted-issuers';

export type FailureReason = (typeof PRESENTATION_FAILURE_REASONS)[number];

/** What the check needs of a stored verification session. */
export interface VerificationSession {
  nonce: string;
  state: string;
  /** Our client_id (`x509_san_dns:<host>`): the audience the key-binding JWT must name. */
  clientId: string;
  expiresAt: Date;
  status: 'PENDING' | 'VERIFIED' | 'FAILED';
  /** Set by the session layer as soon as a response was taken (even one that failed). */
  answered: boolean;
}

/** The form fields of the wallet's direct_post, as received. */
export interface DirectPostResponse {
  vp_token?: unknown;
  state?: unknown;
}

export interface CheckOptions {
  trustedIssuers: readonly TrustedIssuerEntry[];
  /** Keys the subject_id pseudonym and the claims digest: without it, names and a birth date could be guessed back. */
  subjectSecret: string;
  /** The session's tenant: subject ids and claims digests are pairwise, another in each tenant. */
  tenantId: string;
  now?: Date;
  /** Fetches a status list token (compact JWT) by its uri; without it a status reference fails closed. */
  fetchStatusList?: (uri: string) => Promise<string>;
  /** How old a key-binding JWT may be. */
  keyBindingMaxAgeSeconds?: number;
  clockSkewSeconds?: number;
}

export interface Verified {
  status: 'VERIFIED';
  assurance: 'HIGH';
  issuer: string;
  claims: PidClaims;
  subject_id: string;
  claims_digest: string;
  verified_at: string;
}

export interface Failed {
  status: 'FAILED';
  reason: FailureReason;
  /** For the log only: never shown to the wallet, never holds a claim value. */
  detail: string;
}

export type CheckResult = Verified | Failed;

const SIGNING_ALGS = ['ES256', 'ES384', 'ES512', 'EdDSA', 'PS256', 'RS256'];

class CheckFailed extends Error {
  constructor(
    readonly reason: FailureReason,
    detail: string,
  ) {
    super(detail);
  }
}

function fail(reason: FailureReason, detail: string): never {
  throw new CheckFailed(reason, detail);
}

/** A compact JWS's protected header and payload, unverified; unreadable, the check fails with `reason`. */
function readJws(jws: string, reason: FailureReason, what: string) {
  try {
    return { header: decodeProtectedHeader(jws), payload: decodeJwt(jws) };
  } catch {
    fail(reason, `${what} is not a readable JWS`);
  }
}

/**
 * The verifier's check of one direct_post answer, in the order that names the most precise reason:
 * session (answered, expiry, state) → vp_token shape → issuer (typ, trust, signature, vct, validity)
 * → disclosures (each one referenced by the signed payload, exactly the three claims, DCQL) →
 * key binding (cnf signature, nonce, audience, iat, sd_hash) → status list.
 * It never throws for a bad answer: every failure is one reason.
 */
export async function checkPresentation(
  session: VerificationSession,
  response: DirectPostResponse,
  options: CheckOptions,
): Promise<CheckResult> {
  const now = options.now ?? new Date();
  try {
    return await check(session, response, options, now);
  } catch (error) {
    if (error instanceof CheckFailed)
      return { status: 'FAILED', reason: error.reason, detail: error.message };
    throw error;
  }
}

async function check(
  session: VerificationSession,
  response: DirectPostResponse,
  options: CheckOptions,
  now: Date,
): Promise<Verified> {
  const nowSeconds = Math.floor(now.getTime() / 1000);
  const skew = options.clockSkewSeconds ?? 60;

  if (session.answered || session.status !== 'PENDING') fail('ALREADY_ANSWERED', 'session already answered');
  if (now.getTime() >= session.expiresAt.getTime()) fail('SESSION_EXPIRED', 'session expired');
  if (typeof response.state !== 'string' || !sameSecret(response.state, session.state)) {
    fail('STATE_MISMATCH', 'state does not match the session');
  }

  const presentation = singlePidPresentation(response.vp_token);
  const parts = presentation.split('~');
  const issuerJwt = parts[0] ?? '';
  const kbJwt = parts[parts.length - 1] ?? '';
  // sd_hash covers everything up to and including the last '~' (RFC 9901 §4.3.1).
  const presented = presentation.slice(0, presentation.length - kbJwt.length);

  // Issuer-signed JWT.
  const { header, payload } = readJws(issuerJwt, 'BAD_SIGNATURE', 'issuer JWT');
  if (header.typ !== PID_FORMAT) fail('WRONG_CREDENTIAL_TYPE', `issuer JWT typ is ${String(header.typ)}`);
  let issuerJwk: JWK;
  try {
    issuerJwk = (await resolveIssuerKey(options.trustedIssuers, payload.iss, header, now)).jwk;
  } catch (error) {
    if (error instanceof UntrustedIssuerError) fail('UNTRUSTED_ISSUER', error.message);
    throw error;
  }
  const issuer = payload.iss as string;
  if (!(await signatureHolds(issuerJwt, issuerJwk, header.alg))) {
    fail('BAD_SIGNATURE', `issuer signature of ${issuer} does not verify`);
  }
  if (payload.vct !== PID_VCT) fail('WRONG_CREDENTIAL_TYPE', `vct is ${String(payload.vct)}`);
  if (typeof payload.exp !== 'number') fail('CREDENTIAL_EXPIRED', 'credential has no exp');
  if (payload.exp + skew <= nowSeconds) fail('CREDENTIAL_EXPIRED', 'credential expired');
  if (typeof payload.nbf === 'number' && payload.nbf - skew > nowSeconds) {
    fail('CREDENTIAL_EXPIRED', 'credential not yet valid');
  }

  // Disclosures: every one must be bound to the signed payload, and exactly the asked claims disclosed.
  const claims = await disclosedClaims(presented, payload);

  // Key binding: the holder of cnf.jwk, for this session, for us, now, over exactly this presentation.
  await checkKeyBinding(kbJwt, payload, presented, session, nowSeconds, skew, options);

  await checkStatus(payload, header, options, now);

  const pidClaims = Object.fromEntries(REQUESTED_CLAIMS.map((name) => [name, claims[name]])) as PidClaims;
  return {
    status: 'VERIFIED',
    assurance: 'HIGH',
    issuer,
    claims: pidClaims,
    subject_id: subjectId(issuer, pidClaims, options.subjectSecret, options.tenantId),
    claims_digest: claimsDigest(pidClaims, options.subjectSecret, options.tenantId),
    verified_at: now.toISOString(),
  };
}

/** vp_token (OpenID4VP 1.0 with DCQL): a JSON object mapping `pid` to an array of one presentation. */
function singlePidPresentation(vpToken: unknown): string {
  let token = vpToken;
  if (typeof token === 'string') {
    try {
      token = JSON.parse(token);
    } catch {
      fail('WRONG_CREDENTIAL_TYPE', 'vp_token is not a JSON object');
    }
  }
  if (typeof token !== 'object' || token === null || Array.isArray(token)) {
    fail('WRONG_CREDENTIAL_TYPE', 'vp_token is not a JSON object');
  }
  const entries = Object.entries(token);
  const first = entries[0];
  if (entries.length !== 1 || !first || first[0] !== PID_QUERY_ID) {
    fail('WRONG_CREDENTIAL_TYPE', `vp_token must answer exactly the credential query ${PID_QUERY_ID}`);
  }
  const value = first[1];
  if (
    !Array.isArray(value) ||
    value.length !== 1 ||
    typeof value[0] !== 'string' ||
    !value[0].includes('~')
  ) {
    fail('WRONG_CREDENTIAL_TYPE', 'vp_token.pid must hold one SD-JWT presentation');
  }
  return value[0];
}

async function signatureHolds(jws: string, jwk: JWK, alg: unknown): Promise<boolean> {
  if (typeof alg !== 'string' || !SIGNING_ALGS.includes(alg)) return false;
  try {
    await compactVerify(jws, await importJWK(jwk, alg), { algorithms: [alg] });
    return true;
  } catch {
    return false;
  }
}

async function disclosedClaims(
  presented: string,
  payload: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  if ((payload._sd_alg ?? 'sha-256') !== 'sha-256') fail('DISCLOSURE_MISMATCH', 'unsupported _sd_alg');
  let decoded: DecodedSDJwt;
  try {
    decoded = await decodeSdJwt(presented, digest);
  } catch {
    fail('DISCLOSURE_MISMATCH', 'a disclosure is malformed');
  }
  // The library's unpacking silently ignores a disclosure no digest points at: a tampered
  // disclosure would then just vanish. Count them ourselves.
  const referenced = new Set<string>();
  collectDigests(payload, referenced);
  decoded.disclosures.forEach((d) => collectDigests(d.value, referenced));
  const seen = new Set<string>();
  for (const disclosure of decoded.disclosures) {
    const own = disclosure._digest ?? '';
    if (!referenced.has(own)) fail('DISCLOSURE_MISMATCH', 'a disclosure is not referenced by the credential');
    if (seen.has(own)) fail('DISCLOSURE_MISMATCH', 'a disclosure is presented twice');
    seen.add(own);
  }
  const disclosedNames = decoded.disclosures.map((d) => d.key).filter((k): k is string => k !== undefined);
  const extra = disclosedNames.filter((name) => !(REQUESTED_CLAIMS as readonly string[]).includes(name));
  if (extra.length > 0 || disclosedNames.length !== decoded.disclosures.length) {
    fail(
      'DISCLOSURE_MISMATCH',
      `claims disclosed beyond the request: ${extra.join(', ') || 'array elements'}`,
    );
  }
  const claims = await getClaims<Record<string, unknown>>(payload, decoded.disclosures, digest);
  for (const name of REQUESTED_CLAIMS) {
    if (!disclosedNames.includes(name) || typeof claims[name] !== 'string') {
      fail('DISCLOSURE_MISMATCH', `${name} is not disclosed`);
    }
  }
  // DCQL is the request's own statement of what is asked: run it over what was disclosed.
  const query = DcqlQuery.parse(pidDcqlQuery());
  const result = DcqlPresentationResult.fromDcqlPresentation(
    {
      [PID_QUERY_ID]: [
        {
          credential_format: PID_FORMAT,
          vct: String(payload.vct),
          claims: claims as Record<string, never>,
          cryptographic_holder_binding: true,
        },
      ],
    },
    { dcqlQuery: query },
  );
  if (!result.can_be_satisfied)
    fail('DISCLOSURE_MISMATCH', 'the presentation does not satisfy the DCQL query');
  return claims;
}

function collectDigests(value: unknown, into: Set<string>): void {
  if (Array.isArray(value)) {
    value.forEach((item) => collectDigests(item, into));
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  for (const [key, inner] of Object.entries(value)) {
    if (key === '_sd' && Array.isArray(inner)) inner.forEach((d) => typeof d === 'string' && into.add(d));
    else if (key === '...' && typeof inner === 'string') into.add(inner);
    else collectDigests(inner, into);
  }
}

async function checkKeyBinding(
  kbJwt: string,
  payload: Record<string, unknown>,
  presented: string,
  session: VerificationSession,
  nowSeconds: number,
  skew: number,
  options: CheckOptions,
): Promise<void> {
  if (kbJwt === '') fail('KEY_BINDING_INVALID', 'no key-binding JWT');
  const cnf = payload.cnf as { jwk?: JWK } | undefined;
  if (!cnf?.jwk) fail('KEY_BINDING_INVALID', 'credential has no cnf.jwk');
  const { header, payload: kb } = readJws(kbJwt, 'KEY_BINDING_INVALID', 'key-binding JWT');
  if (header.typ !== 'kb+jwt') fail('KEY_BINDING_INVALID', `key-binding JWT typ is ${String(header.typ)}`);
  if (!(await signatureHolds(kbJwt, cnf.jwk, header.alg))) {
    fail('KEY_BINDING_INVALID', 'key-binding JWT is not signed by the cnf key');
  }
  if (typeof kb.nonce !== 'string' || !sameSecret(kb.nonce, session.nonce)) {
    fail('NONCE_MISMATCH', 'key-binding nonce is not the session nonce');
  }
  // Libraries only check that aud is present: it must be us, or a presentation made for another
  // verifier could be replayed here.
  if (kb.aud !== session.clientId) fail('AUDIENCE_MISMATCH', 'key-binding aud is not our client_id');
  const maxAge = options.keyBindingMaxAgeSeconds ?? 300;
  if (typeof kb.iat !== 'number' || kb.iat > nowSeconds + skew || kb.iat < nowSeconds - maxAge - skew) {
    fail('KEY_BINDING_INVALID', 'key-binding iat is not fresh');
  }
  const expected = createHash('sha256').update(presented, 'ascii').digest('base64url');
  if (kb.sd_hash !== expected)
    fail('KEY_BINDING_INVALID', 'key-binding sd_hash does not match the presentation');
}

async function checkStatus(
  payload: Record<string, unknown>,
  credentialHeader: { kid?: unknown; x5c?: unknown },
  options: CheckOptions,
  now: Date,
): Promise<void> {
  if (payload.status === undefined) return;
  const ref = (payload.status as { status_list?: { idx?: unknown; uri?: unknown } }).status_list;
  if (!ref || typeof ref.idx !== 'number' || typeof ref.uri !== 'string') {
    fail('CREDENTIAL_REVOKED', 'status reference is malformed');
  }
  if (!options.fetchStatusList)
    fail('CREDENTIAL_REVOKED', 'status cannot be checked: no status list fetcher');
  let token: string;
  try {
    token = await options.fetchStatusList(ref.uri);
  } catch (error) {
    // A refused fetch (an address that is not public, a redirect, too large, too slow) says why.
    fail('CREDENTIAL_REVOKED', `status list could not be fetched (${(error as Error).message})`);
  }
  // Fail closed: a status that cannot be confirmed is not VALID. A status token carrying no key
  // reference of its own is looked up with the credential's (same issuer, same entry).
  try {
    const header = decodeProtectedHeader(token);
    const body = decodeJwt(token);
    if (header.typ !== 'statuslist+jwt') throw new Error('typ');
    // The status list must be signed by a key of the credential's own issuer entry.
    const { jwk } = await resolveIssuerKey(
      options.trustedIssuers,
      payload.iss,
      { ...credentialHeader, ...header },
      now,
    );
    if (!(await signatureHolds(token, jwk, header.alg))) throw new Error('signature');
    if (body.sub !== ref.uri) throw new Error('sub');
    if (typeof body.exp === 'number' && body.exp <= Math.floor(now.getTime() / 1000)) throw new Error('exp');
    const status = getListFromStatusListJWT(token).getStatus(ref.idx);
    if (status !== 0) fail('CREDENTIAL_REVOKED', `status is ${status}`);
  } catch (error) {
    if (error instanceof CheckFailed) throw error;
    fail('CREDENTIAL_REVOKED', `status list token rejected (${(error as Error).message})`);
  }
}

/** Constant-time equality of two secrets (state, nonce). */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * `wallet:` + base64url(HMAC-SHA256(secret, canonical [tenant, issuer, family_name, given_name,
 * birth_date])). The PID carries no stable subject identifier, so the person is the three claims
 * at one issuer; keyed, so the pseudonym cannot be reversed by guessing names and birth dates; and
 * pairwise (docs/WALLET.md#checking-an-answer): the tenant is in the input, so two tenants
 * cannot link one person by the id.
 */
export function subjectId(issuer: string, claims: PidClaims, secret: string, tenantId: string): string {
  const input = canonicalJson([tenantId, issuer, claims.family_name, claims.given_name, claims.birth_date]);
  return 'wallet:' + createHmac('sha256', secret).update(input).digest('base64url');
}

/**
 * The subject id of before v4, the same in every tenant: kept only so that a role assigned under it
 * still signs its holder in (docs/DECISIONS.md#pairwise-wallet-subjects). Never handed out otherwise.
 */
export function legacySubjectId(issuer: string, claims: PidClaims, secret: string): string {
  const input = canonicalJson([issuer, claims.family_name, claims.given_name, claims.birth_date]);
  return 'wallet:' + createHmac('sha256', secret).update(input).digest('base64url');
}

/**
 * hex HMAC-SHA256 of the RFC 8785 canonical JSON of the three claims, keyed per tenant with a key
 * derived from the subject secret, which only identity holds (docs/WALLET.md#checking-an-answer).
 * Mandates, events and evidence carry this, never the claims; an unkeyed hash of a known name
 * and a birth date would give the date back in a fraction of a second. Mandates signed before
 * carry an unkeyed SHA-256 (docs/DECISIONS.md#claims-digests-signed-before-v4).
 */
export function claimsDigest(claims: PidClaims, secret: string, tenantId: string): string {
  const key = createHmac('sha256', secret)
    .update(canonicalJson(['claims_digest', tenantId]))
    .digest();
  return createHmac('sha256', key).update(canonicalJson(claims)).digest('hex');
}
