import { startMongoStandin, type MongoStandin } from './index';

/**
 * jest globalSetup: without MONGO_URL, starts one MongoDB stand-in per jest worker and points
 * MONGO_URL at the first, so every Mongo adapter suite runs on each `npm test` (workers inherit
 * this environment; worker-setup.ts gives each worker its own). The stand-in serves one command at
 * a time: shared, one suite's backlog (a fault test storing thousands of events) stalled the other
 * worker's suites into their timeouts. With MONGO_URL set (a real MongoDB), nothing is started and
 * the suites run against that.
 */
export default async function globalSetup(globalConfig: { maxWorkers: number }): Promise<void> {
  if (process.env.MONGO_URL) return;
  const count = Math.max(1, globalConfig.maxWorkers);
  const standins = await Promise.all(Array.from({ length: count }, () => startMongoStandin()));
  process.env.MONGO_URL = standins[0]!.url;
  process.env.MONGO_STANDIN_URLS = standins.map((s) => s.url).join(',');
  process.env.MONGO_STANDIN = '1';
  (globalThis as { mongoStandins?: MongoStandin[] }).mongoStandins = standins;
}
