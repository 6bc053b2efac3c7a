import { startSentinelDeployment, type SentinelDeployment } from '../redis-sentinel';

/** jest globalSetup of the "on Redis Sentinel" project: one private deployment for the run. */
export default async function setup(): Promise<void> {
  const deployment = await startSentinelDeployment('mandate-e2e');
  (globalThis as { sentinelUnderTest?: SentinelDeployment }).sentinelUnderTest = deployment;
  process.env.MANDATE_TEST_REDIS_SENTINELS = deployment.sentinelList;
  process.env.MANDATE_TEST_REDIS_SENTINEL_NAME = deployment.name;
}
