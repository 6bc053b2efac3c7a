export * from './verify';
export { main, run } from './cli';
