import type { JWK } from 'jose';

export type { JWK };

/**
 * Signs mandate payloads. The local adapter holds an in-process key; a KMS adapter (later issue)
 * implements the same interface, so nothing above it knows where the key lives.
 */
export interface Signer {
  /** The key id carried in every JWS protected header and in the JWKS. */
  readonly kid: string;
  readonly alg: 'ES256';
  /** A compact JWS over `payload` with `kid` in the protected header. */
  sign(payload: string): Promise<string>;
  /** Public keys (with kid, alg, use: 'sig') that check every signature this signer has made. */
  publicJwks(): Promise<JWK[]>;
}
