import { canonicalJson } from '../core/canonical';
import { utf8 } from './merkle';

/**
 * The tamper-evident audit log's wire forms (docs/API.md#proving-the-log), shared by the audit
 * service that appends, proves and signs, and the offline checker that verifies. Browser-safe: the
 * dashboard checks bundles with it (the leaf hash over node's SHA-256 is in merkle-node.ts).
 */

/** The JWS `typ` of a signed checkpoint. */
export const AUDIT_CHECKPOINT_TYP = 'audit-checkpoint+jwt';

/** What a checkpoint signs (its JWS payload is the canonical JSON of exactly these members). */
export interface CheckpointClaims {
  tenant_id: string;
  tree_size: number;
  /** base64url (no padding) of the tree's 32-byte RFC 9162 root hash. */
  root_hash: string;
  issued_at: string;
}

/**
 * The bytes of an event's leaf: the RFC 8785 canonical JSON (UTF-8) of the event as served, with
 * its `seq`. The leaf hash is SHA-256(0x00 || these bytes).
 */
export function auditLeafBytes(event: { seq?: number }): Uint8Array {
  return utf8(canonicalJson(event));
}
