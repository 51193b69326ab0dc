/**
 * Jest runs the TypeScript sources as native ES modules (NestJS 12 is ESM-only), in three
 * projects named by file suffix:
 *
 * - unit        `*.spec.ts`: pure, in memory; no services, no global setup.
 * - integration `*.int.spec.ts`: adapters, contracts and processes against real Postgres,
 *               PGlite, Kafka, the KurrentDB double or loopback HTTP servers.
 * - e2e         `*.e2e.spec.ts`: the whole app over HTTP, the fault suites, the browser suite.
 * - chaos       `test/chaos/*.chaos.spec.ts`: every role in a process of its own under load while
 *               processes, Postgres and Kafka fail; starts its own services. Only `npm run test:chaos`
 *               runs it (`npm test` leaves it out).
 *
 * The integration and e2e setups start the services their suites use; when both tiers run in
 * one jest run each service starts once and stops after the last test (test/support/test-services.ts).
 *
 * ts-jest only transpiles (tsconfig.jest.json sets `isolatedModules`, which ts-jest follows, and
 * `module: esnext`, so that ts-jest emits CommonJS where jest requires a file, as for the global
 * setups, and ES modules for the suites; `nodenext` would emit by package type alone): type
 * checking every test file's whole import graph again made the run CPU-bound. `npm test` runs
 * `npm run typecheck` (tsc over the same files) before jest instead, and `isolatedModules` makes
 * tsc refuse what a per-file transpile would get wrong (for example a type-only import in a
 * decorated constructor, whose metadata Nest's injection reads).
 */
const shared = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.jest.json', diagnostics: { ignoreCodes: [151002] } }],
  },
  testTimeout: 60000,
};
const roots = ['src', 'projections', 'test'];
const suffixed = (suffix) => roots.map((root) => `<rootDir>/${root}/**/*${suffix}`);

export default {
  testTimeout: 60000,
  // `npm test` runs the suites in shards side by side (scripts/test-shards.mjs); this splits them.
  testSequencer: '<rootDir>/test/shard-sequencer.mjs',
  projects: [
    {
      ...shared,
      displayName: 'unit',
      testMatch: suffixed('.spec.ts'),
      testPathIgnorePatterns: ['/node_modules/', '\\.int\\.spec\\.ts$', '\\.e2e\\.spec\\.ts$', '\\.chaos\\.spec\\.ts$'],
    },
    {
      ...shared,
      displayName: 'integration',
      testMatch: suffixed('.int.spec.ts'),
      globalSetup: '<rootDir>/test/integration.global-setup.ts',
      globalTeardown: '<rootDir>/test/integration.global-teardown.ts',
    },
    {
      ...shared,
      displayName: 'e2e',
      testMatch: suffixed('.e2e.spec.ts'),
      globalSetup: '<rootDir>/test/e2e.global-setup.ts',
      globalTeardown: '<rootDir>/test/e2e.global-teardown.ts',
    },
    {
      ...shared,
      displayName: 'chaos',
      testMatch: ['<rootDir>/test/chaos/*.chaos.spec.ts'],
    },
  ],
};
