import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['dist/', 'dist-testkit/', 'node_modules/', 'coverage/', '.tmp/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: globals.node,
      // Type information for the rules below: each file is checked with the tsconfig.json
      // nearest to it (the root one: src, test, bench, scripts, vitest.config.ts; testkit/'s own).
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-console': 'error',
      // An un-awaited promise in a payment tool is a bug: a write that may not have
      // happened, or a rejection nobody sees. Fire-and-forget says so with `void` or .catch().
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-unnecessary-condition': [
        'error',
        { allowConstantLoopConditions: 'only-allowed-literals' },
      ],
    },
  },
  {
    // The shape of the product's code: a function that branches a lot or runs long is split
    // into named steps (docs/development.md "Lint and format"). Warnings, so a change in
    // progress still lints; the count is kept near zero.
    files: ['src/**/*.ts'],
    rules: {
      complexity: ['warn', 15],
      'max-lines-per-function': ['warn', { max: 80, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    // Plain JavaScript (this file, bin/, scripts/) is in no tsconfig: no type information.
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // The CLI owns stdout (results) and stderr (one-line errors); tests, bench and
    // the test kit print on purpose.
    files: ['src/cli/**', 'bench/**', 'test/**', 'testkit/**', 'bin/**'],
    rules: { 'no-console': 'off' },
  },
);
