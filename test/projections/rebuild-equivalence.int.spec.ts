import { afterEach, describe, expect, it } from '@jest/globals';
import { eventually } from '../support/eventually.js';
import { HARNESS_KINDS, openProjectionHarness, type ProjectionHarness } from './support/projection-harness.js';
import { seededRandom, writeRandomHistories } from './support/random-history.js';

/**
 * Promise 9 (docs/architecture.md): a read model rebuilt from the log equals the one built incrementally, over random
 * valid histories (the real deciders decide every command) and random batch boundaries.
 */
describe.each(HARNESS_KINDS)('a rebuilt read model on %s', (kind) => {
  let harness: ProjectionHarness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  // A fixed list of seeds keeps failures reproducible; each seed is a different history. Each case
  // writes and rebuilds about 400 steps on PGlite (CPU-bound): on a busy two-core host one took
  // more than jest's default bound of 60 s, hence a wider bound (it asserts equality, not speed).
  const CASE_TIMEOUT_MS = 180_000;
  it.each([11, 23, 47])(
    'equals the incrementally built one, table for table (seed %i)',
    async (seed) => {
      harness = await openProjectionHarness(kind);
      const random = seededRandom(seed * 7919);
      // Incremental: small random batches while the histories are being written, interleaved.
      harness.projector({ liveBatchSize: 1 + Math.floor(random() * 7), rebuildBatchSize: 3 + Math.floor(random() * 50) });
      const { appended } = await writeRandomHistories(harness.store, { seed, steps: 400, concurrency: 4 });
      expect(appended).toBeGreaterThan(150);
      await harness.caughtUp();
      const incremental = await harness.dump();
      // The histories exercise most of the lifecycle, not one path through it.
      expect(new Set(incremental.timeline.map((row) => row.type)).size).toBeGreaterThanOrEqual(10);
      await harness.expectModelsEqualTheLog();

      for (const name of ['executions', 'timeline', 'audit', 'schedules']) {
        const { version } = await harness.rebuild(name);
        expect(version).toBe(2);
        await harness.switched(name, 2);
      }
      await harness.caughtUp();
      const rebuilt = await harness.dump();
      expect(rebuilt).toEqual(incremental);
      expect(rebuilt.executions.length).toBeGreaterThan(10);
      // The old version's tables are gone once nobody reads them (dropped just after the switch).
      const oldTables = async () =>
        (
          await harness!.sql.query<{ name: string }>(
            `select table_name as name from information_schema.tables where table_schema = 'read_models' and table_name like '%\\_v1'`,
          )
        ).rows;
      await eventually(async () => expect(await oldTables()).toEqual([]), {
        what: "the old version's tables to be dropped",
        timeoutMs: 5_000,
        intervalMs: 50,
      });
    },
    CASE_TIMEOUT_MS,
  );
});
