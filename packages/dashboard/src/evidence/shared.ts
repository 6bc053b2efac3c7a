/**
 * `@mandate/shared` for the browser: only the evidence contract (digest and mandate signature),
 * from the shared package's own files, for packages/evidence-cli's checker (see node-crypto.ts),
 * the audit event types and what each means (the audit page's filter, the webhooks' picker), the header that says a call is the dashboard's
 * (api.ts) and the log proofs' checks.
 */
export { CLIENT_HEADER, EVENT_TYPE_DESCRIPTIONS, EVENT_TYPES } from '../../../shared/src/event-types';
export { EVIDENCE_BUNDLE_MEMBERS, evidenceDigestOf } from '../../../shared/src/evidence-digest';
export { MANDATE_SIGNED_FIELDS, mandateSigningPayload } from '../../../shared/src/mandate-signature';
export { AUDIT_CHECKPOINT_TYP, auditLeafBytes, type CheckpointClaims } from '../../../shared/src/audit-log';
export { canonicalJson } from '../../../shared/src/canonical';
export { MerkleHasher, fromBase64Url, sha256 } from '../../../shared/src/merkle';
