/** Jest runs the TypeScript sources as native ES modules (NestJS 12 is ESM-only). */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json', diagnostics: { ignoreCodes: [151002] } }],
  },
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/projections/**/*.spec.ts', '<rootDir>/test/**/*.spec.ts'],
  testTimeout: 60000,
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
};
