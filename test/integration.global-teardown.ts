import type * as TestServices from './support/test-services.js';

const { releaseTestServices } = require('./support/test-services.ts') as typeof TestServices;

/** Lets go of the integration tier's services: each stops once no tier of this run needs it. */
export default async function globalTeardown(): Promise<void> {
  await releaseTestServices('integration');
}
