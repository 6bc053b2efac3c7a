export * from './types';
export * from './topology';
export * from './in-process';
export * from './rabbitmq';
export * from './batching';
export * from './subscriber';
