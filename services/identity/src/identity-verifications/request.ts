import { randomBytes, webcrypto } from 'node:crypto';
import { importPKCS8, SignJWT } from 'jose';
import { CLIENT_ID_PREFIX, REQUEST_OBJECT_CONTENT_TYPE, REQUEST_OBJECT_TYP } from '../contract';
import { pidDcqlQuery } from './pid-query';
import { x509 } from './x509';

export { CLIENT_ID_PREFIX, REQUEST_OBJECT_CONTENT_TYPE, REQUEST_OBJECT_TYP };
/** The audience of a request object fetched by request_uri (static discovery, OpenID4VP 1.0 §5.8). */
export const SELF_ISSUED_AUDIENCE = 'https://self-issued.me/v2';

export type SigningKey = Parameters<SignJWT['sign']>[0];

export interface VerifierIdentity {
  /** The DNS name of the service's public URL. */
  host: string;
  /** `x509_san_dns:<host>`: also the audience every key-binding JWT must name. */
  clientId: string;
  privateKey: SigningKey;
  /** Leaf first, base64 DER, as the JWS x5c header wants it. */
  certificateChain: string[];
}

/** A fresh P-256 key pair (extractable) and a self-signed certificate naming `host`, valid for a year from `now`. */
export async function selfSignedCertificate(host: string, now: Date = new Date()) {
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomBytes(8).toString('hex'),
    name: `CN=${host}`,
    notBefore: new Date(now.getTime() - 60_000),
    notAfter: new Date(now.getTime() + 365 * 24 * 3600 * 1000),
    keys: keys as unknown as Parameters<typeof x509.X509CertificateGenerator.createSelfSigned>[0]['keys'],
    signingAlgorithm: algorithm,
    extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: host }])],
  });
  return { keys, cert };
}

/** A fresh key and a self-signed certificate for `host`: embedded mode and tests. */
export async function createVerifierIdentity(
  host: string,
  now: Date = new Date(),
): Promise<VerifierIdentity> {
  const { keys, cert } = await selfSignedCertificate(host, now);
  return {
    host,
    clientId: CLIENT_ID_PREFIX + host,
    privateKey: keys.privateKey as unknown as SigningKey,
    certificateChain: [Buffer.from(cert.rawData).toString('base64')],
  };
}

/** An operator's key (PKCS#8 PEM, P-256) and certificate chain (PEM, leaf first) for `host`. */
export async function verifierIdentityFromPem(
  host: string,
  privateKeyPem: string,
  certificateChainPem: string,
): Promise<VerifierIdentity> {
  const certs = x509.PemConverter.decode(certificateChainPem).map((der) => new x509.X509Certificate(der));
  const leaf = certs[0];
  if (!leaf) throw new Error('the verifier certificate chain is empty');
  if (!dnsNamesOf(leaf).includes(host)) throw new Error(`the verifier certificate does not name ${host}`);
  return {
    host,
    clientId: CLIENT_ID_PREFIX + host,
    privateKey: await importPKCS8(privateKeyPem, 'ES256'),
    certificateChain: certs.map((c) => Buffer.from(c.rawData).toString('base64')),
  };
}

export function dnsNamesOf(cert: x509.X509Certificate): string[] {
  const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
  return (san?.names.items ?? []).filter((n) => n.type === 'dns').map((n) => n.value);
}

/** 32 random bytes, base64url: the nonce and the state of a session. */
export function freshSecret(): string {
  return randomBytes(32).toString('base64url');
}

export interface AuthorizationRequestInput {
  identity: VerifierIdentity;
  /** Where the wallet POSTs (direct_post): …/v1/identity-verifications/{id}/response. */
  responseUri: string;
  /** Where the wallet GETs the signed request: …/v1/identity-verifications/{id}/request. */
  requestUri: string;
  nonce: string;
  state: string;
  now?: Date;
  /** Lifetime of the request object; the session's expiry (5 minutes) is the natural value. */
  lifetimeSeconds?: number;
}

export interface AuthorizationRequest {
  /** `openid4vp://?client_id=…&request_uri=…`: what the QR code or the deep link carries. */
  authorizationRequest: string;
  /** The signed request object served at request_uri. */
  requestObject: string;
}

export async function buildAuthorizationRequest(
  input: AuthorizationRequestInput,
): Promise<AuthorizationRequest> {
  const { identity } = input;
  // x509_san_dns: a wallet without a trust list for us only accepts a response_uri on our host.
  if (new URL(input.responseUri).hostname !== identity.host) {
    throw new Error(`response_uri ${input.responseUri} is not on ${identity.host}`);
  }
  const iat = Math.floor((input.now ?? new Date()).getTime() / 1000);
  const requestObject = await new SignJWT({
    client_id: identity.clientId,
    response_type: 'vp_token',
    response_mode: 'direct_post',
    response_uri: input.responseUri,
    nonce: input.nonce,
    state: input.state,
    dcql_query: pidDcqlQuery(),
    client_metadata: {
      vp_formats_supported: {
        'dc+sd-jwt': { 'sd-jwt_alg_values': ['ES256'], 'kb-jwt_alg_values': ['ES256'] },
      },
    },
  })
    .setProtectedHeader({ alg: 'ES256', typ: REQUEST_OBJECT_TYP, x5c: identity.certificateChain })
    .setAudience(SELF_ISSUED_AUDIENCE)
    .setIssuedAt(iat)
    .setExpirationTime(iat + (input.lifetimeSeconds ?? 300))
    .sign(identity.privateKey);
  const query = new URLSearchParams({ client_id: identity.clientId, request_uri: input.requestUri });
  return { authorizationRequest: `openid4vp://?${query.toString()}`, requestObject };
}
