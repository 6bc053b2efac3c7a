export * from './relay';
export * from './spool';
