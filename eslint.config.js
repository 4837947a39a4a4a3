import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/'] },
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
    // fakes print on purpose.
    files: ['src/cli/**', 'bench/**', 'test/**', 'src/fakes/**', 'bin/**'],
    rules: { 'no-console': 'off' },
  },
);
