import crypto from 'node:crypto';
import { auditLeafBytes } from './audit-log';
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
  return merkleHasher.leafHash(auditLeafBytes(event));
}
