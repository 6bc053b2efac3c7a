/**
 * A test wallet: answers an `openid4vp://` authorization request with a PID from a TEST issuer,
 * as an EUDI wallet would, and can be told to misbehave so every failure reason can be provoked.
 *
 * It fetches the signed request object from request_uri (http only on loopback), checks it
 * (signature by the x5c leaf, client_id `x509_san_dns:` named by the leaf, response_uri on that host),
 * presents exactly the claims the DCQL query asks for with a key-binding JWT, and POSTs the
 * form-encoded direct_post to response_uri. It shares the protocol's vocabulary with the verifier
 * (identity's contract), never the verifier's code: a wallet checks what the verifier built.
 * The CLI is scripts/test-wallet.ts.
 */
import 'reflect-metadata';
import { createHash, randomBytes, webcrypto } from 'node:crypto';
import { CLIENT_ID_PREFIX, PID_QUERY_ID, REQUEST_OBJECT_TYP } from '@mandate/identity';
import * as x509 from '@peculiar/x509';
import { digest, generateSalt } from '@sd-jwt/crypto-nodejs';
import { SDJwtVcInstance } from '@sd-jwt/sd-jwt-vc';
import { DcqlQuery } from 'dcql';
import { compactVerify, decodeProtectedHeader, importJWK, SignJWT, type JWK } from 'jose';
import { createHolderKey, createTestPidIssuer, type PersonData, type TestPidIssuer } from './pid-issuer';

// @peculiar/x509 looks for a browser's WebCrypto unless given Node's (and needs the Reflect polyfill above).
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

/** The DNS names of a certificate's subjectAltName. */
function dnsNamesOf(cert: x509.X509Certificate): string[] {
  const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
  return (san?.names.items ?? []).filter((n) => n.type === 'dns').map((n) => n.value);
}

/** A fresh random nonce or state, for the misbehaviours that answer with the wrong one. */
const freshSecret = () => randomBytes(32).toString('base64url');

export const MISBEHAVIOURS = [
  'wrong_nonce',
  'wrong_audience',
  'expired',
  'tampered_disclosure',
  'untrusted_issuer',
  'replay',
  'wrong_state',
  'wrong_vct',
  'bad_kb_signature',
  'revoked',
] as const;
export type Misbehaviour = (typeof MISBEHAVIOURS)[number];

/**
 * Each misbehaviour a verifier must refuse by failing the session, with the reason it answers (replay
 * aside: it is refused after a success; wrong_state aside: an answer without the session's state is
 * not the session's wallet and is refused without touching the session).
 */
export const MISBEHAVIOUR_REASONS: [Misbehaviour, string][] = [
  ['wrong_nonce', 'NONCE_MISMATCH'],
  ['wrong_audience', 'AUDIENCE_MISMATCH'],
  ['expired', 'CREDENTIAL_EXPIRED'],
  ['tampered_disclosure', 'DISCLOSURE_MISMATCH'],
  ['untrusted_issuer', 'UNTRUSTED_ISSUER'],
  ['wrong_vct', 'WRONG_CREDENTIAL_TYPE'],
  ['bad_kb_signature', 'KEY_BINDING_INVALID'],
  ['revoked', 'CREDENTIAL_REVOKED'],
];

export interface WalletOptions {
  /** The PID provider whose credential the wallet holds. */
  issuer: TestPidIssuer;
  misbehave?: Misbehaviour;
  person?: Partial<PersonData>;
  now?: Date;
}

/** The parts of a verified request object the wallet acts on. */
export interface ResolvedRequest {
  clientId: string;
  responseUri: string;
  nonce: string;
  state: string;
  dcqlQuery: DcqlQuery;
}

export class WalletRejectedRequest extends Error {}

function reject(message: string): never {
  throw new WalletRejectedRequest(message);
}

function isLoopback(url: URL): boolean {
  return ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
}

function checkedUrl(raw: unknown, what: string): URL {
  if (typeof raw !== 'string') reject(`${what} is missing`);
  const url = new URL(raw);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url))) {
    reject(`${what} must be https (http only on loopback)`);
  }
  return url;
}

/** Checks a request object as a wallet must before showing anything to its user. */
export async function resolveRequestObject(
  requestObject: string,
  expectedClientId?: string,
): Promise<ResolvedRequest> {
  const header = decodeProtectedHeader(requestObject);
  if (header.typ !== REQUEST_OBJECT_TYP) reject(`request object typ is ${String(header.typ)}`);
  const leafB64 = header.x5c?.[0];
  if (!leafB64) reject('request object carries no x5c');
  const leaf = new x509.X509Certificate(Buffer.from(leafB64, 'base64'));
  const now = new Date();
  if (leaf.notBefore > now || leaf.notAfter < now) reject('the verifier certificate is not valid now');
  let payload: Record<string, unknown>;
  try {
    const verified = await compactVerify(requestObject, await leaf.publicKey.export());
    payload = JSON.parse(Buffer.from(verified.payload).toString('utf8')) as Record<string, unknown>;
  } catch {
    reject('request object signature does not verify');
  }
  const clientId = payload.client_id;
  if (typeof clientId !== 'string' || !clientId.startsWith(CLIENT_ID_PREFIX)) reject('unsupported client_id');
  if (expectedClientId !== undefined && clientId !== expectedClientId)
    reject('client_id differs from the link');
  const host = clientId.slice(CLIENT_ID_PREFIX.length);
  if (!dnsNamesOf(leaf).includes(host)) reject(`the verifier certificate does not name ${host}`);
  if (payload.response_type !== 'vp_token' || payload.response_mode !== 'direct_post') {
    reject('only response_type vp_token with response_mode direct_post is supported');
  }
  const responseUri = checkedUrl(payload.response_uri, 'response_uri');
  if (responseUri.hostname !== host) reject('response_uri is not on the client_id host');
  if (typeof payload.nonce !== 'string' || typeof payload.state !== 'string')
    reject('nonce or state missing');
  if (typeof payload.exp === 'number' && payload.exp * 1000 < Date.now()) reject('request object expired');
  const dcqlQuery = DcqlQuery.parse(payload.dcql_query as DcqlQuery.Input);
  DcqlQuery.validate(dcqlQuery);
  return {
    clientId,
    responseUri: responseUri.toString(),
    nonce: payload.nonce,
    state: payload.state,
    dcqlQuery,
  };
}

/** The form fields of the direct_post answer to a resolved request, built without any HTTP. */
export async function buildDirectPostResponse(
  request: ResolvedRequest,
  options: WalletOptions,
): Promise<{ vp_token: string; state: string }> {
  const { misbehave } = options;
  const nowSeconds = Math.floor((options.now ?? new Date()).getTime() / 1000);
  const holder = await createHolderKey();
  const issuer =
    misbehave === 'untrusted_issuer'
      ? await createTestPidIssuer({ issuer: 'https://untrusted-pid-issuer.invalid' })
      : options.issuer;
  const statusIndex = misbehave === 'revoked' ? Math.floor(Math.random() * 1024) : undefined;
  const credential = await issuer.issue({
    holderJwk: holder.publicJwk,
    person: options.person,
    ...(misbehave === 'expired' ? { iat: nowSeconds - 400 * 24 * 3600, exp: nowSeconds - 24 * 3600 } : {}),
    ...(misbehave === 'wrong_vct' ? { vct: 'urn:example:not-a-pid:1' } : {}),
    ...(statusIndex !== undefined ? { statusIndex } : {}),
  });
  if (statusIndex !== undefined) issuer.revoke(statusIndex);

  // Disclose exactly the claims the DCQL query names for the credential query `pid`.
  const credentialQuery = request.dcqlQuery.credentials.find((c) => c.id === PID_QUERY_ID);
  if (!credentialQuery) reject(`the DCQL query does not ask for ${PID_QUERY_ID}`);
  const frame: Record<string, boolean> = {};
  for (const claim of credentialQuery.claims ?? []) {
    const name = 'path' in claim ? claim.path[0] : undefined;
    if (typeof name === 'string') frame[name] = true;
  }
  const sdjwt = new SDJwtVcInstance({ hasher: digest, hashAlg: 'sha-256', saltGenerator: generateSalt });
  let presented = await sdjwt.present(credential, frame);
  if (!presented.endsWith('~')) presented += '~';
  if (misbehave === 'tampered_disclosure') presented = tamperFirstDisclosure(presented);

  const kbKey: JWK =
    misbehave === 'bad_kb_signature' ? (await createHolderKey()).privateJwk : holder.privateJwk;
  const kbJwt = await new SignJWT({
    iat: nowSeconds,
    aud: misbehave === 'wrong_audience' ? `${CLIENT_ID_PREFIX}other-verifier.invalid` : request.clientId,
    nonce: misbehave === 'wrong_nonce' ? freshSecret() : request.nonce,
    sd_hash: createHash('sha256').update(presented, 'ascii').digest('base64url'),
  })
    .setProtectedHeader({ alg: 'ES256', typ: 'kb+jwt' })
    .sign(await importJWK(kbKey, 'ES256'));

  return {
    vp_token: JSON.stringify({ [PID_QUERY_ID]: [presented + kbJwt] }),
    state: misbehave === 'wrong_state' ? freshSecret() : request.state,
  };
}

/** Changes the value of the first disclosure, keeping its salt and name: its digest no longer matches. */
function tamperFirstDisclosure(presented: string): string {
  const [jwt, first, ...rest] = presented.split('~');
  if (jwt === undefined || !first) return presented;
  const [salt, name] = JSON.parse(Buffer.from(first, 'base64url').toString('utf8')) as [string, string];
  const forged = Buffer.from(JSON.stringify([salt, name, 'Forged'])).toString('base64url');
  return [jwt, forged, ...rest].join('~');
}

export interface WalletAnswer {
  status: number;
  body: unknown;
  /** With `replay`: the verifier's answer to the same response sent a second time. */
  replay?: { status: number; body: unknown };
}

async function postForm(
  url: string,
  form: Record<string, string>,
): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, body };
}

/** Said when POST /v1/identity-verifications gave no link: its 503 answer, or `jq`'s null for the missing member. */
export const NO_WALLET =
  'no authorization request: this service has no wallet configured (set WALLET_PUBLIC_URL and WALLET_SUBJECT_SECRET on identity, or use npm start or npm run start:services, which set them)';

/** One sentence on what was passed instead of an `openid4vp://` link. */
function notALink(raw: string): string {
  const text = raw.trim();
  if (['', 'null', 'undefined'].includes(text) || text.includes('SERVICE_UNAVAILABLE')) return NO_WALLET;
  return 'not an openid4vp:// authorization request: pass the authorization_request of POST /v1/identity-verifications';
}

/** The whole wallet: link → request object → presentation → direct_post; the verifier's HTTP answer. */
export async function answerAuthorizationRequest(
  authorizationRequest: string,
  options: WalletOptions,
): Promise<WalletAnswer> {
  const link = URL.parse(authorizationRequest.trim());
  if (link?.protocol !== 'openid4vp:') reject(notALink(authorizationRequest));
  const requestUri = checkedUrl(link.searchParams.get('request_uri') ?? undefined, 'request_uri');
  const linkClientId = link.searchParams.get('client_id') ?? undefined;
  const res = await fetch(requestUri, { headers: { accept: 'application/oauth-authz-req+jwt' } });
  if (!res.ok) reject(`request_uri answered ${res.status}`);
  const request = await resolveRequestObject((await res.text()).trim(), linkClientId);
  const form = await buildDirectPostResponse(request, options);
  const answer: WalletAnswer = await postForm(request.responseUri, form);
  if (options.misbehave === 'replay') answer.replay = await postForm(request.responseUri, form);
  return answer;
}
