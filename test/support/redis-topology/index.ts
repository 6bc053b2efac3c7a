/**
 * The Redis topology a jest project runs its stacks on (jest.config.js, "on Redis Sentinel" and
 * "on Redis Cluster"; docs/TESTING.md, "Redis topologies"). A project's setup file names the
 * topology (`MANDATE_TEST_REDIS_TOPOLOGY`), its global setup started the private deployment once
 * for the run and put its addresses in the environment; startStack gives every process that
 * deployment instead of the shared single node.
 */
export type RedisTopology = 'single' | 'sentinel' | 'cluster';

export function topologyUnderTest(): RedisTopology {
  const named = process.env.MANDATE_TEST_REDIS_TOPOLOGY;
  if (named === undefined || named === '') return 'single';
  if (named === 'sentinel' || named === 'cluster') return named;
  throw new Error(`MANDATE_TEST_REDIS_TOPOLOGY: "${named}" is neither sentinel nor cluster`);
}

/** The Redis variables of every process of a stack: none on the single node (startStack's own). */
export function topologyEnv(): Record<string, string> {
  switch (topologyUnderTest()) {
    case 'single':
      return {};
    case 'sentinel':
      return {
        // With Sentinel REDIS_URL carries only the password and database.
        REDIS_URL: 'redis://sentinel-ignored/0',
        REDIS_SENTINELS: required('MANDATE_TEST_REDIS_SENTINELS'),
        REDIS_SENTINEL_NAME: required('MANDATE_TEST_REDIS_SENTINEL_NAME'),
      };
    case 'cluster':
      return { REDIS_CLUSTER_NODES: required('MANDATE_TEST_REDIS_CLUSTER_NODES') };
  }
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: the project's global setup did not start its deployment`);
  return value;
}
