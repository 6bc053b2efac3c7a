/**
 * @mandate/shared/data (layer 5 of 8, docs/SERVICE-CONVENTIONS.md, "The shared package's layers").
 * MongoDB and Redis adapters' shared parts. Imports the layers below (core … events).
 */
export * from './mongo';
export * from './mongo-outbox-source';
export * from './redis-target';
export * from './synced-clock';
export * from './filter-indexes';
