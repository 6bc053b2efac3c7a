import crypto from 'node:crypto';
import { canonicalJson } from '@mandate/shared/core';

// crypto.hash (node ≥ 20.12; the engines field asks for ≥ 20.19): one call, no Hash object per digest.

/**
 * 0x00 || the UTF-8 of the JSON, written into one reused buffer instead of a new string per leaf;
 * an event larger than it gets a one-off string, so one huge event does not pin a huge buffer.
 */
const leafInput = Buffer.allocUnsafeSlow(64 * 1024);
leafInput[0] = 0;

/**
 * SHA-256(0x00 || canonical JSON of the event with its seq): an audit event's leaf hash, as
 * `merkleHasher.leafHash(auditLeafBytes(event))` of the shared kernel computes it (the checker's
 * way; a test holds the two equal). The digest comes back as latin1 ("binary") and is copied into
 * a pooled Buffer, as nodeSha256's are: no ArrayBuffer per leaf (docs/PERFORMANCE.md,
 * "Tamper-evident log benchmark (issue 42)").
 */
export function auditLeafHash(event: { seq?: number }): Uint8Array {
  return leafHashOfJson(canonicalJson(event));
}

/** The leaf hash of an event whose canonical JSON is already written. */
export function leafHashOfJson(json: string): Uint8Array {
  // UTF-8 takes at most 3 bytes per UTF-16 unit.
  const input =
    1 + 3 * json.length <= leafInput.length
      ? leafInput.subarray(0, 1 + leafInput.write(json, 1, 'utf8'))
      : '\u0000' + json;
  return Buffer.from(crypto.hash('sha256', input, 'binary'), 'binary');
}
