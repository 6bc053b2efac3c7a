// setupFiles of the "on Redis Sentinel" project: this test file's stacks run on its deployment.
process.env.MANDATE_TEST_REDIS_TOPOLOGY = 'sentinel';
