/**
 * jest setupFiles, before every test file: the worker's own stand-in (global-setup.ts started one
 * per worker), so a suite's Mongo load queues behind its own worker's suites only.
 */
const urls = process.env.MONGO_STANDIN_URLS?.split(',').filter(Boolean) ?? [];
if (urls.length > 0) {
  const worker = Number(process.env.JEST_WORKER_ID ?? '1');
  process.env.MONGO_URL = urls[(Math.max(1, worker) - 1) % urls.length];
}
