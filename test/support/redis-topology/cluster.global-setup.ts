import { startRedisCluster, type ClusterDeployment } from '../redis-cluster';

/** jest globalSetup of the "on Redis Cluster" project: one private six-node cluster for the run. */
export default async function setup(): Promise<void> {
  const deployment = await startRedisCluster();
  (globalThis as { clusterUnderTest?: ClusterDeployment }).clusterUnderTest = deployment;
  process.env.MANDATE_TEST_REDIS_CLUSTER_NODES = deployment.nodeList;
}
