/** The repository's jest setup (its setupFilesAfterEnv above all) on the one fixture of event-contract.test.ts. */
const path = require('node:path');
const root = require('../../../jest.config.js');
const main = root.projects.find((project) => project.displayName === 'main');

module.exports = {
  ...main,
  displayName: undefined,
  testTimeout: root.testTimeout,
  rootDir: path.resolve(__dirname, '../../..'),
  roots: ['<rootDir>/test/contracts/event-contract-fixture'],
  testMatch: ['**/*.fixture.ts'],
  // No MongoDB: the fixture stores nothing.
  globalSetup: undefined,
  globalTeardown: undefined,
  setupFiles: [],
  reporters: ['default'],
};
