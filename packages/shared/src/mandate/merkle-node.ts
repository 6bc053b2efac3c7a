import crypto from 'node:crypto';
import { canonicalJson } from '../core/canonical';
import { MerkleHasher, type Sha256 } from './merkle';

// crypto.hash (node ≥ 20.12; the engines field asks for ≥ 20.19): one call, no Hash object per digest.

/** Node's native SHA-256, for the Merkle trees the services keep (merkle.ts stays import-free). */
export const nodeSha256: Sha256 = (data) => crypto.hash('sha256', data, 'buffer') as unknown as Uint8Array;

/** RFC 9162 hashing over Node's SHA-256. */
export const merkleHasher = new MerkleHasher(nodeSha256);

/**
 * SHA-256(0x00 || canonical JSON of the event with its seq): an audit event's leaf hash, as
 * `merkleHasher.leafHash(auditLeafBytes(event))` computes it (the checker's way; a test holds the
 * two equal). U+0000 is the single byte 0x00 in UTF-8, so hashing the string '\0' + JSON is the
 * same digest without encoding the JSON into bytes and copying them behind the prefix.
 */
export function auditLeafHash(event: { seq?: number }): Uint8Array {
  return crypto.hash('sha256', '\u0000' + canonicalJson(event), 'buffer') as unknown as Uint8Array;
}
