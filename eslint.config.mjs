import js from '@eslint/js';
import jest from 'eslint-plugin-jest';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // test/ci/fixture is a deliberately broken suite that .ci/count is tested on; the event contract's
  // fixture holds a test that must fail (test/contracts/event-contract.test.ts).
  {
    ignores: [
      '**/node_modules/**',
      '**/dist/**',
      'jest.config.js',
      'test/ci/fixture/**',
      'test/contracts/event-contract-fixture/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/bin/*.js', '.ci/*.js'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { require: 'readonly', process: 'readonly', console: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // Test helpers hand back parsed JSON of any shape; tests assert on it.
    files: ['**/testing/**', 'test/support/**', '**/test/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Functions stay under 60 lines everywhere but in the tests (whose describe blocks are lists
    // of cases): services, packages, their scripts, the launchers and the benchmarks.
    files: [
      'services/*/src/**/*.ts',
      'packages/*/src/**/*.{ts,tsx}',
      'packages/*/scripts/**/*.ts',
      'scripts/**/*.ts',
      'bench/**/*.{ts,cjs}',
    ],
    rules: { 'max-lines-per-function': ['error', { max: 60, skipBlankLines: true, skipComments: true }] },
  },
  {
    // The gateway's request handler is a pipeline of named steps (services/gateway/src/pipeline):
    // no step, and nothing on the request path around it, grows past 60 lines.
    files: ['services/gateway/src/pipeline/**/*.ts', 'services/gateway/src/app.ts'],
    rules: {
      'max-lines-per-function': [
        'error',
        { max: 60, skipBlankLines: false, skipComments: false, IIFEs: true },
      ],
    },
  },
  {
    // What a service may run without is checked, never asserted: createApp fills in the defaults
    // and its type says so (verify's AppDeps), so no `deps.x!` hides a missing dependency.
    files: ['services/*/src/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "TSNonNullExpression > MemberExpression[object.name='deps']",
          message: 'Type the filled-in deps (or check the optional one) instead of asserting it with !',
        },
      ],
    },
  },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Type-aware linting of the whole tree: each TypeScript file is checked with the program of its
    // nearest tsconfig.json (the root one for services, packages, tests, scripts and bench; the
    // dashboard's own), and the few JavaScript files, which no tsconfig includes, with a default
    // program of their own (globs without ** and at most 8 files: they are slow to check).
    languageOptions: {
      parserOptions: {
        projectService: {
          allowDefaultProject: [
            'eslint.config.mjs',
            '.ci/*.js',
            'bench/*.cjs',
            'scripts/*.mjs',
            'test/contracts/*.mjs',
            'test/support/*.mjs',
            'test/support/*.js',
            'packages/evidence-cli/bin/*.js',
          ],
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: { '@typescript-eslint/no-floating-promises': 'error' },
  },
  {
    files: ['**/*.test.ts', '**/test/**'],
    plugins: { jest },
    rules: {
      // A test must assert. Besides expect, these helpers assert (each is a function of expects):
      // a new helper that asserts is added here by name.
      'jest/expect-expect': [
        'error',
        {
          assertFunctionNames: [
            'expect',
            'expectOneBudget',
            'expectOneOfRacingRevocations',
            'expectFailed',
            'expectStatus',
            'expectAccessible',
            'expectAllDelivered',
            'expectLoadDelivered',
            'expect401',
            'expectAllReceived',
            'expectAreasFit',
            'expectWholeAfterCut',
            'expectDuplicateInProgress',
            'expectNoStaleDecision',
          ],
        },
      ],
      'jest/no-conditional-expect': 'error',
      // No skipped test (docs/TESTING.md, "Nothing skipped"): a test runs and passes or is removed.
      'jest/no-disabled-tests': 'error',
      'jest/no-focused-tests': 'error',
      'jest/valid-title': 'error',
    },
  },
);
