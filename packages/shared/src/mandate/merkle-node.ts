import crypto from 'node:crypto';
import { MerkleHasher, type Sha256, type Sha256Into } from './merkle';

// crypto.hash (node ≥ 20.12; the engines field asks for ≥ 20.19): one call, no Hash object per digest.

/**
 * Node's native SHA-256, for the Merkle trees the services keep (merkle.ts stays import-free). The
 * digest comes back as a latin1 ("binary") string and is copied into a Buffer from Node's pool: a 'buffer'
 * digest allocates an ArrayBuffer of its own, which cost more than the hash of 65 bytes itself.
 */
export const nodeSha256: Sha256 = (data) => Buffer.from(crypto.hash('sha256', data, 'binary'), 'binary');

/** nodeSha256 with the digest's bytes copied where they are kept: no Buffer per digest at all. */
export const nodeSha256Into: Sha256Into = (data, out, offset) => {
  const digest = crypto.hash('sha256', data, 'binary');
  for (let i = 0; i < 32; i++) out[offset + i] = digest.charCodeAt(i);
};

/** RFC 9162 hashing over Node's SHA-256. */
export const merkleHasher = new MerkleHasher(nodeSha256, nodeSha256Into);
