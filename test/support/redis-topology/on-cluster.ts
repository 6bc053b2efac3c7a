// setupFiles of the "on Redis Cluster" project: this test file's stacks run on its cluster.
process.env.MANDATE_TEST_REDIS_TOPOLOGY = 'cluster';
