// ESLint (typescript-eslint, type-aware) for everything TypeScript; Prettier owns the layout,
// so eslint-config-prettier turns the stylistic rules off. `npm run lint` runs both and
// dependency-cruiser (the import directions, .dependency-cruiser.cjs).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.cache/', '.flostra/', '.scratch/', '.tmp/', 'coverage/', 'console/dist/', 'bench/reference/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: globals.node,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Promise 6 (docs/architecture.md): a promise nobody awaits or catches is a failure nobody sees.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      // Untrusted input is `unknown` and parsed with zod at the edge; `any` is kept for the few
      // heterogeneous registries (projection definitions) that say so.
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/restrict-template-expressions': 'off',
      '@typescript-eslint/require-await': 'off',
      // Rethrowing what a callee or a stream failed with, whatever its static type, hides nothing.
      '@typescript-eslint/only-throw-error': 'off',
      // Flags a loop variable's first value as unused when every path reassigns it before use.
      'no-useless-assignment': 'off',
      // Functions that are meant to travel alone (kafkajs's per-batch callbacks, promise
      // settlers) trip these without a bug behind them.
      '@typescript-eslint/unbound-method': 'off',
      '@typescript-eslint/prefer-promise-reject-errors': 'off',
      // Log lines and problem details stringify what they are given on purpose.
      '@typescript-eslint/no-base-to-string': 'off',
      // kafkajs's log levels are a plain numeric enum compared with numbers it hands over.
      '@typescript-eslint/no-unsafe-enum-comparison': 'off',
      eqeqeq: ['error', 'always'],
      'no-console': 'error',
    },
  },
  {
    files: ['**/*.spec.ts', 'test/**/*.ts', 'bench/**/*.ts', '**/testing/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/unbound-method': 'off',
      'no-console': 'off',
    },
  },
  {
    // Roles measure through the Metrics port (src/core/metrics.port.ts) and trace through
    // src/observability/tracing.ts: prom-client and OpenTelemetry stay behind them.
    files: ['src/**/*.ts', 'projections/**/*.ts'],
    ignores: ['src/observability/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(prom-client|@opentelemetry/)', message: 'Use the Metrics port or src/observability/tracing.ts.' }] },
      ],
    },
  },
  {
    // The web console runs in the browser: its globals, none of Node's.
    files: ['console/src/**/*.ts', 'console/src/**/*.tsx'],
    languageOptions: { globals: globals.browser },
  },
  {
    // Jest loads its global setup and teardown as CommonJS, where only require() reaches the
    // TypeScript sources (see test/integration.global-setup.ts).
    files: ['test/*.global-setup.ts', 'test/*.global-teardown.ts', 'test/support/test-services.ts'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['**/*.js', '**/*.cjs', '**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: globals.node },
  },
  prettier,
);
