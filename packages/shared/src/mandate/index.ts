/**
 * @mandate/shared/mandate (layer 3 of 8, docs/SERVICE-CONVENTIONS.md, "The shared package's layers").
 * The mandate's own rules that every party checks alike: signatures, snapshots, evidence digests,
 * the audit log's Merkle tree, budget periods. Imports only core.
 */
export * from './mandate-signature';
export * from './mandate-snapshot';
export * from './evidence-digest';
export * from './snapshot-mac';
export * from './merkle';
export * from './merkle-node';
export * from './audit-log';
export * from './budget-period';
