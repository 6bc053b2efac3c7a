import canonicalize from 'canonicalize';
import crypto from 'node:crypto';

/** RFC 8785 canonical JSON: the byte string that signatures and digests are computed over. */
export function canonicalJson(value: unknown): string {
  const out = canonicalize(value);
  if (out === undefined) throw new Error('value cannot be canonicalised');
  return out;
}

// crypto.hash (node ≥ 20.12): one call, no Hash object per digest.
const oneShot = typeof crypto.hash === 'function' ? crypto.hash : undefined;

export function sha256Hex(input: string | Buffer): string {
  if (oneShot) return oneShot('sha256', input, 'hex');
  return crypto.createHash('sha256').update(input).digest('hex');
}
