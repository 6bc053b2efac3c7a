import type { JWK } from 'jose';

export type { JWK };

export interface SignOptions {
  /**
   * The JWS `typ` header. Mandate signatures carry none; other documents signed with the same key
   * (evidence digests) name their type, so one can never be passed off as the other.
   */
  typ?: string;
}

/**
 * Signs payloads with the service's signing key. LocalSigner holds an in-process key, KmsSigner
 * asks AWS KMS; nothing above this interface knows where the key lives.
 */
export interface Signer {
  /** The key id carried in every JWS protected header and in the JWKS. */
  readonly kid: string;
  readonly alg: 'ES256';
  /** A compact JWS over `payload` with `kid` (and `typ`, if given) in the protected header. */
  sign(payload: string, options?: SignOptions): Promise<string>;
  /**
   * Public keys (with kid, alg, use: 'sig') that check every signature this signer has made or
   * still accepts; the key that signs now comes first.
   */
  publicJwks(): Promise<JWK[]>;
}

/** The `typ` of the JWS over an evidence bundle's digest (docs/API.md, "Evidence export"). */
export const EVIDENCE_JWS_TYP = 'mandate-evidence+jws';
