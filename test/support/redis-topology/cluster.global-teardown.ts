import type { ClusterDeployment } from '../redis-cluster';

export default async function teardown(): Promise<void> {
  await (globalThis as { clusterUnderTest?: ClusterDeployment }).clusterUnderTest?.stop();
}
