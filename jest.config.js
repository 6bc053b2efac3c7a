/** One jest run for the whole monorepo. TypeScript is transformed by swc (type checking is `npm run typecheck`). */
const project = {
  testEnvironment: 'node',
  roots: ['<rootDir>/packages', '<rootDir>/services', '<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.(t|j)sx?$': [
      '@swc/jest',
      { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } },
    ],
  },
  // @mandate/verifier's package.json names its published build: tests run its sources, as the
  // root tsconfig's `paths` do for tsc, tsx and esbuild.
  moduleNameMapper: {
    '^@mandate/verifier$': '<rootDir>/packages/verifier/src/index.ts',
    '^@mandate/verifier/decide$': '<rootDir>/packages/verifier/src/decide.ts',
  },
  // jose ships ESM only; jest's module loader needs it as CommonJS.
  transformIgnorePatterns: ['/node_modules/(?!(jose)/)'],
  // Every event a test's producers build holds to its type's data schema, or that test fails.
  setupFilesAfterEnv: ['<rootDir>/test/support/event-contract.ts'],
};

/**
 * The conformance run (every route against its contract) and the end-to-end suites that lean on
 * Redis, run again on a private Redis Sentinel deployment and on a private six-node Redis Cluster
 * (docs/TESTING.md, "Redis topologies"). Their stacks use in-memory stores: no MongoDB stand-in.
 */
const ON_EVERY_TOPOLOGY = [
  '<rootDir>/test/e2e/redis-topology.test.ts',
  '<rootDir>/test/e2e/route-security.test.ts',
  '<rootDir>/test/e2e/idempotency.test.ts',
  '<rootDir>/test/e2e/authzen-services.test.ts',
];
const onTopology = (name, topology) => ({
  ...project,
  displayName: `on Redis ${name}`,
  testMatch: ON_EVERY_TOPOLOGY,
  globalSetup: `<rootDir>/test/support/redis-topology/${topology}.global-setup.ts`,
  globalTeardown: `<rootDir>/test/support/redis-topology/${topology}.global-teardown.ts`,
  setupFiles: [`<rootDir>/test/support/redis-topology/on-${topology}.ts`],
});

module.exports = {
  projects: [
    {
      ...project,
      displayName: 'main',
      // The MongoDB stand-in (or a real MongoDB via MONGO_URL) for every Mongo adapter suite.
      globalSetup: '<rootDir>/test/support/mongo-standin/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/mongo-standin/global-teardown.ts',
      setupFiles: ['<rootDir>/test/support/mongo-standin/worker-setup.ts'],
    },
    onTopology('Sentinel', 'sentinel'),
    onTopology('Cluster', 'cluster'),
  ],
  testTimeout: 30000,
  maxWorkers: 2,
  // The default output, and the names of test files still running after 10 minutes (a worker that
  // blocks is never ended by jest's timeouts, and the run would otherwise hang in silence).
  reporters: ['default', '<rootDir>/test/support/running-suites-reporter.js'],
};
