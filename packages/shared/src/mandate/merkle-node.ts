import crypto from 'node:crypto';
import { MerkleHasher, type Sha256 } from './merkle';

// crypto.hash (node ≥ 20.12; the engines field asks for ≥ 20.19): one call, no Hash object per digest.

/** Node's native SHA-256, for the Merkle trees the services keep (merkle.ts stays import-free). */
export const nodeSha256: Sha256 = (data) => crypto.hash('sha256', data, 'buffer') as unknown as Uint8Array;

/** RFC 9162 hashing over Node's SHA-256. */
export const merkleHasher = new MerkleHasher(nodeSha256);
