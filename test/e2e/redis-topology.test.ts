import { topologyUnderTest } from '../support/redis-topology';
import { createTenant, revokeThenVerify, startStack, type Stack } from '../support/stack';

/**
 * The guard of the Redis topology projects (jest.config.js; docs/TESTING.md, "Redis topologies"):
 * in each, the stack's processes really run on that topology, as their start lines say. In the
 * main project it checks the single node.
 */
const EXPECTED = {
  single: /^single node 127\.0\.0\.1:6379\//,
  sentinel: /^Sentinel master "mandate-e2e" via (127\.0\.0\.1:\d+,?){3}, database 0$/,
  cluster: /^Redis Cluster via (127\.0\.0\.1:\d+,?){6}$/,
};

describe(`the stack on Redis (${topologyUnderTest()})`, () => {
  let stack: Stack;
  beforeAll(async () => {
    // At info level: the start lines name the topology.
    stack = await startStack({ all: { LOG_LEVEL: 'info' } });
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
  }, 60_000);

  it('when the five processes start, then the gateway, mandates and verify name the topology under test, and a revoke is seen by the next verify', async () => {
    // Each process's line about where its Redis is (gateway: limits, keys; mandates: snapshots written; verify: read).
    const said = (p: { output: string[] }, msg: string) =>
      p.output
        .join('')
        .split('\n')
        .filter((l) => l.includes(msg))
        .map((l) => String((JSON.parse(l) as { redis?: unknown }).redis));
    const lines = [
      said(stack.gateway, '"Redis topology"'),
      said(stack.services.mandates, '"mandate snapshots in Redis"'),
      said(stack.services.verify, '"verify reads mandate snapshots from Redis"'),
    ];
    for (const named of lines) {
      expect(named.length).toBeGreaterThan(0);
      for (const redis of named) expect(redis).toMatch(EXPECTED[topologyUnderTest()]);
    }
    const { auth } = await createTenant(stack, { name: 'Topology', plan: 'enterprise' });
    expect(await revokeThenVerify(stack, auth)).toEqual({
      created: 201,
      before: 'ALLOW OK',
      revoked: 200,
      after: 'DENY MANDATE_REVOKED',
    });
  });
});
