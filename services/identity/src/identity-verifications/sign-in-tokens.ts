import { calculateJwkThumbprint, exportJWK, generateKeyPair, importPKCS8, SignJWT, type JWK } from 'jose';
import { createPublicKey } from 'node:crypto';
import type { SigningKey } from './request';

/** Lifetime of a wallet sign-in token. */
export const SIGN_IN_TOKEN_TTL_SECONDS = 15 * 60;
export const DEFAULT_SIGN_IN_AUDIENCE = 'mandate-api';

/** The service's own JWT issuer for wallet sign-ins: its key signs, its public JWK is published. */
export interface SignInIssuer {
  issuer: string;
  audience: string;
  kid: string;
  privateKey: SigningKey;
  publicJwk: JWK;
}

export async function createSignInIssuer(
  issuer: string,
  audience: string,
  privateKeyPem?: string,
): Promise<SignInIssuer> {
  let privateKey: SigningKey;
  let publicJwk: JWK;
  if (privateKeyPem) {
    privateKey = await importPKCS8(privateKeyPem, 'ES256');
    publicJwk = await exportJWK(createPublicKey(privateKeyPem));
  } else {
    const pair = await generateKeyPair('ES256', { extractable: true });
    privateKey = pair.privateKey;
    publicJwk = await exportJWK(pair.publicKey);
  }
  const kid = await calculateJwkThumbprint(publicJwk);
  return { issuer, audience, kid, privateKey, publicJwk: { ...publicJwk, kid, alg: 'ES256', use: 'sig' } };
}

/** sub is the subject without its `wallet:` scheme: the gateway's wallet issuer adds it back. */
export async function signSignInToken(
  signer: SignInIssuer,
  subjectId: string,
  tenantId: string,
  now: Date,
): Promise<string> {
  const iat = Math.floor(now.getTime() / 1000);
  return new SignJWT({ tid: tenantId })
    .setProtectedHeader({ alg: 'ES256', kid: signer.kid, typ: 'JWT' })
    .setIssuer(signer.issuer)
    .setAudience(signer.audience)
    .setSubject(subjectId.replace(/^wallet:/, ''))
    .setIssuedAt(iat)
    .setExpirationTime(iat + SIGN_IN_TOKEN_TTL_SECONDS)
    .sign(signer.privateKey);
}
