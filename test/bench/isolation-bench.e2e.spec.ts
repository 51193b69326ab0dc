import { describe, expect, it } from '@jest/globals';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runIsolationBench, SCENARIOS } from '../../bench/isolation.js';

/**
 * `npm run bench:isolation` at a smoke size: every scenario and a revocation trial run against the
 * built server, so that a benchmark that no longer runs fails the build. Its figures are not
 * judged here (docs/benchmarks.md holds them); only that each part ran to the end, and that the
 * removed token was refused while the load went on (within the trial's 15 s).
 */

const MAIN = join(fileURLToPath(new URL('../..', import.meta.url)), 'dist', 'src', 'main.js');

describe('bench:isolation at a smoke size', () => {
  it('runs every scenario and a revocation trial to the end', async () => {
    const report = await runIsolationBench({
      main: MAIN,
      scenarios: SCENARIOS,
      executions: 3,
      concurrency: 2,
      warmup: 1,
      revocationTrials: 1,
      revocationTimeoutMs: 15_000,
      log: () => undefined,
    });

    expect(report.scenarios.map((result) => [result.scenario, result.quiet.count, result.loaded.count])).toEqual(
      SCENARIOS.map((scenario) => [scenario, 3, 3]),
    );
    expect(report.revocation.trials).toHaveLength(1);
    // The one outcome checked: while the load and the busy directory go on, the token is refused.
    expect(report.revocation.trials[0].revokedAfterMs).not.toBeNull();
  }, 600_000);
});
