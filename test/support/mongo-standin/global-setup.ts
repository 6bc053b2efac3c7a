import { startMongoStandin, type MongoStandin } from './index';

/**
 * jest globalSetup: without MONGO_URL, starts the MongoDB stand-in and points MONGO_URL at it,
 * so every Mongo adapter suite runs on each `npm test` (workers inherit this environment).
 * With MONGO_URL set (a real MongoDB), nothing is started and the suites run against that.
 */
export default async function globalSetup(): Promise<void> {
  if (process.env.MONGO_URL) return;
  const standin = await startMongoStandin();
  process.env.MONGO_URL = standin.url;
  process.env.MONGO_STANDIN = '1';
  (globalThis as { mongoStandin?: MongoStandin }).mongoStandin = standin;
}
