/**
 * The little of node:crypto that the evidence contract (packages/shared/src: core/canonical.ts,
 * mandate/evidence-digest.ts) uses, for the browser: SHA-256 as `createHash('sha256').update(s).digest('hex')`.
 * Vite and the dashboard's tsconfig map `node:crypto` here, so the dashboard checks a bundle with
 * the very code the offline checker (packages/evidence-cli) runs.
 */
import { sha256 } from '@mandate/shared/browser';

/** SHA-256 of bytes (FIPS 180-4), lowercase hex: the shared plain-TypeScript one the log proofs use. */
export function sha256HexOf(bytes: Uint8Array): string {
  return Array.from(sha256(bytes), (byte) => byte.toString(16).padStart(2, '0')).join('');
}

class Sha256 {
  private readonly parts: Uint8Array[] = [];
  update(input: string | Uint8Array): this {
    this.parts.push(typeof input === 'string' ? new TextEncoder().encode(input) : input);
    return this;
  }
  digest(_encoding: 'hex'): string {
    const all = new Uint8Array(this.parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of this.parts) {
      all.set(p, at);
      at += p.length;
    }
    return sha256HexOf(all);
  }
}

function createHash(algorithm: string): Sha256 {
  if (algorithm !== 'sha256') throw new Error(`only sha256 is available in the browser, not ${algorithm}`);
  return new Sha256();
}

const crypto = { createHash, hash: undefined as undefined | ((a: string, i: string, e: string) => string) };
export default crypto;
