import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['dist/', 'dist-testkit/', 'node_modules/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  {
    // The CLI owns stdout (results) and stderr (one-line errors); tests, bench and
    // the test kit print on purpose.
    files: ['src/cli/**', 'bench/**', 'test/**', 'testkit/**', 'bin/**'],
    rules: { 'no-console': 'off' },
  },
);
