import type { SentinelDeployment } from '../redis-sentinel';

export default async function teardown(): Promise<void> {
  await (globalThis as { sentinelUnderTest?: SentinelDeployment }).sentinelUnderTest?.stop();
}
