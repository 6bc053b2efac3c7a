import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // test/ci/fixture is a deliberately broken suite that .ci/count is tested on.
  { ignores: ['**/node_modules/**', '**/dist/**', 'jest.config.js', 'test/ci/fixture/**'] },
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
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': [
        'error',
        { selector: "MemberExpression[object.name='it'][property.name='only']", message: 'no .only' },
      ],
    },
  },
);
