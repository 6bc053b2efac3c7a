import { canonicalJson } from '@mandate/shared/core';
import { merkleHasher } from '@mandate/shared/mandate';

/**
 * 0x00 || the UTF-8 of the JSON, written into one reused buffer instead of a new one per leaf;
 * an event larger than it gets a buffer of its own, so one huge event does not pin a huge buffer.
 */
const leafInput = Buffer.allocUnsafeSlow(64 * 1024);
leafInput[0] = 0;

/**
 * SHA-256(0x00 || canonical JSON of the event with its seq): an audit event's leaf hash, as
 * `merkleHasher.leafHash(auditLeafBytes(event))` of the shared kernel computes it (the checker's
 * way; a test holds the two equal), with the kernel's own SHA-256 (no ArrayBuffer per digest,
 * docs/PERFORMANCE.md, "Tamper-evident log benchmark (issue 42)").
 */
export function auditLeafHash(event: { seq?: number }): Uint8Array {
  return merkleHasher.sha256(leafInputOfJson(canonicalJson(event)));
}

/**
 * 0x00 || the UTF-8 of the JSON: a leaf's hash input, valid until the next call (it is written
 * into the reused buffer when it fits).
 */
export function leafInputOfJson(json: string): Uint8Array {
  // UTF-8 takes at most 3 bytes per UTF-16 unit.
  return 1 + 3 * json.length <= leafInput.length
    ? leafInput.subarray(0, 1 + leafInput.write(json, 1, 'utf8'))
    : Buffer.from('\u0000' + json, 'utf8');
}
