export * from './verify';
export { main, run } from './cli';
export * from './log-proof';
