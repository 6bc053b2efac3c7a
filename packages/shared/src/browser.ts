/**
 * @mandate/shared/browser: what a browser may load (the dashboard's evidence check, the offline
 * checker): the mandate layer's digests, signatures and Merkle proofs, canonical JSON and the event
 * vocabulary. Nothing here reaches node's network, file system or process; `node:crypto`'s hash is
 * the one node module, which the dashboard's bundle replaces (packages/dashboard/src/evidence).
 */
export * from './core/canonical';
export * from './events/event-types';
export * from './mandate/audit-log';
export * from './mandate/evidence-digest';
export * from './mandate/mandate-signature';
export * from './mandate/merkle';
