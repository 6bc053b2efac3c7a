export * from './relay';
export * from './spool';
export * from './memory-outbox';
export * from './journal';
