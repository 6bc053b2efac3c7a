/**
 * @mandate/shared/mandate (layer 3 of 8, docs/SERVICE-CONVENTIONS.md, "The shared package's layers").
 * The mandate's own rules that every party checks alike: signatures, snapshots, evidence digests,
 * the audit log's Merkle tree, budget periods. Imports only core.
 */

export { AUDIT_CHECKPOINT_TYP, type CheckpointClaims } from './audit-log';
export { EVIDENCE_BUNDLE_MEMBERS, EvidenceDigest, evidenceDigestOf } from './evidence-digest';
export { MANDATE_SIGNED_FIELDS, mandateSigningPayload } from './mandate-signature';
export {
  DEFAULT_SNAPSHOT_PREFIX,
  effectiveState,
  EXPIRABLE_STATES,
  isPastExpiry,
  snapshotKey,
} from './mandate-snapshot';
export { merkleHasher } from './merkle-node';
export {
  consistencyRanges,
  fromBase64Url,
  inclusionRanges,
  type LeafRange,
  MemoryMerkleTree,
  multiproofRanges,
  type NodeId,
  perfectNodes,
  toBase64Url,
} from './merkle';
export { snapshotMac, type SnapshotMac } from './snapshot-mac';
