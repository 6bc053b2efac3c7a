import {
  CompactSign,
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  type CryptoKey,
  type JWK,
} from 'jose';
import { evidenceDigestOf } from '@mandate/shared/mandate';
import { EVIDENCE_JWS_TYP } from '../src/verify';

/** An ES256 signing key of a test, with its public JWK named by its thumbprint. */
export interface TestKey {
  kid: string;
  jwk: JWK;
  privateKey: CryptoKey;
}

export async function makeKey(): Promise<TestKey> {
  const pair = await generateKeyPair('ES256', { extractable: true });
  const { kty, crv, x, y } = await exportJWK(pair.publicKey);
  const kid = await calculateJwkThumbprint({ kty, crv, x, y }, 'sha256');
  return { kid, jwk: { kty, crv, x, y, kid, alg: 'ES256', use: 'sig' }, privateKey: pair.privateKey };
}

export const sign = (key: TestKey, payload: string, typ?: string) =>
  new CompactSign(new TextEncoder().encode(payload))
    .setProtectedHeader({ alg: 'ES256', kid: key.kid, ...(typ ? { typ } : {}) })
    .sign(key.privateKey);

/** The members of a bundle that its digest covers, and the keys it lists. */
interface BundleParts<M, E> {
  mandate: M;
  exported_at: string;
  events: E[];
  evidence_exports: number;
  keys: JWK[];
}

/** A bundle's parts with their digest and its signature by `key`, members in the exported order. */
export async function sealBundle<M, E>(parts: BundleParts<M, E>, key: TestKey) {
  const { mandate, exported_at, events, evidence_exports, keys } = parts;
  const digest = evidenceDigestOf({ mandate, exported_at, events, evidence_exports });
  return {
    mandate,
    exported_at,
    events,
    evidence_exports,
    keys,
    digest,
    signature: await sign(key, digest, EVIDENCE_JWS_TYP),
  };
}
