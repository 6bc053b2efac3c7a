export * from './types';
export * from './topology';
export * from './encoding';
export * from './in-process';
export * from './rabbit-publisher';
export * from './rabbit-consumer';
export * from './batching';
export * from './amqp-nodes';
