import canonicalize from 'canonicalize';
import { createHash } from 'node:crypto';

/** RFC 8785 canonical JSON: the byte string that signatures and digests are computed over. */
export function canonicalJson(value: unknown): string {
  const out = canonicalize(value);
  if (out === undefined) throw new Error('value cannot be canonicalised');
  return out;
}

export function sha256Hex(input: string | Buffer): string {
  return createHash('sha256').update(input).digest('hex');
}
