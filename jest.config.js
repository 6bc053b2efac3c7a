/** One jest run for the whole monorepo. TypeScript is transformed by swc (type checking is `npm run typecheck`). */
module.exports = {
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
  testTimeout: 30000,
  // The MongoDB stand-in (or a real MongoDB via MONGO_URL) for every Mongo adapter suite.
  globalSetup: '<rootDir>/test/support/mongo-standin/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/mongo-standin/global-teardown.ts',
  setupFiles: ['<rootDir>/test/support/mongo-standin/worker-setup.ts'],
  // Every event a test's producers build holds to its type's data schema, or that test fails.
  setupFilesAfterEnv: ['<rootDir>/test/support/event-contract.ts'],
  maxWorkers: 2,
  // The default output, and the names of test files still running after 10 minutes (a worker that
  // blocks is never ended by jest's timeouts, and the run would otherwise hang in silence).
  reporters: ['default', '<rootDir>/test/support/running-suites-reporter.js'],
};
