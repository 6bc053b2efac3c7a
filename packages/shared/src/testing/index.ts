export * from './contract';
export * from './http';
