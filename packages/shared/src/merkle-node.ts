import crypto from 'node:crypto';
import { auditLeafBytes } from './audit-log';
import { canonicalJson } from './canonical';
import { MerkleHasher, type Sha256 } from './merkle';

// crypto.hash (node ≥ 20.12): one call, no Hash object per digest.
const oneShot = typeof crypto.hash === 'function' ? crypto.hash : undefined;

/** Node's native SHA-256, for the Merkle trees the services keep (merkle.ts stays import-free). */
export const nodeSha256: Sha256 = (data) =>
  oneShot
    ? (oneShot('sha256', data, 'buffer') as unknown as Uint8Array)
    : crypto.createHash('sha256').update(data).digest();

/** RFC 9162 hashing over Node's SHA-256. */
export const merkleHasher = new MerkleHasher(nodeSha256);

/** SHA-256(0x00 || canonical JSON of the event with its seq): an audit event's leaf hash. */
export function auditLeafHash(event: { seq?: number }): Uint8Array {
  // U+0000 is the single byte 0x00 in UTF-8, so hashing the string '\0' + JSON is the same digest
  // without encoding the JSON into bytes and copying them behind the prefix (every stored event).
  if (oneShot) return oneShot('sha256', '\u0000' + canonicalJson(event), 'buffer') as unknown as Uint8Array;
  return merkleHasher.leafHash(auditLeafBytes(event));
}
