export * from './contract';
export * from './http';
export * from './amqp';
export * from './publisher';
export * from './loopback';
export * from './outbox';
export * from './tools';
export * from './index-coverage';
