import crypto from 'node:crypto';
import { canonicalJson } from '@mandate/shared/core';

// crypto.hash (node ≥ 20.12; the engines field asks for ≥ 20.19): one call, no Hash object per digest.

/**
 * SHA-256(0x00 || canonical JSON of the event with its seq): an audit event's leaf hash, as
 * `merkleHasher.leafHash(auditLeafBytes(event))` of the shared kernel computes it (the checker's way; a test holds the
 * two equal). U+0000 is the single byte 0x00 in UTF-8, so hashing the string '\0' + JSON is the
 * same digest without encoding the JSON into bytes and copying them behind the prefix.
 */
export function auditLeafHash(event: { seq?: number }): Uint8Array {
  return crypto.hash('sha256', '\u0000' + canonicalJson(event), 'buffer') as unknown as Uint8Array;
}
