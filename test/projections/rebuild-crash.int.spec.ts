import { afterEach, describe, expect, it } from '@jest/globals';
import type { BatchInfo } from '../../src/projector/projection-runner.js';
import { readCheckpoint } from '../../src/projector/projection-catalog.js';
import type { Projector } from '../../src/projector/projector.js';
import { eventually } from '../support/eventually.js';
import { HARNESS_KINDS, openProjectionHarness, type ProjectionHarness } from './support/projection-harness.js';
import { writeRandomHistories } from './support/random-history.js';

const BATCH = 7;

/**
 * Promise 9 (docs/architecture.md) under a crash: a builder that dies in the middle of a batch loses that batch whole
 * (writes and checkpoint roll back together), and whoever takes over resumes from the
 * checkpoint — exactly one builder at a time, nothing applied twice, nothing skipped.
 */
describe.each(HARNESS_KINDS)('a rebuild interrupted by a crash on %s', (kind) => {
  let harness: ProjectionHarness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  it('resumes from its checkpoint under one builder and ends equal to the log', async () => {
    harness = await openProjectionHarness(kind);
    const h = harness;
    let crashed: Projector | null = null;
    let builderBatches = 0;
    const first: Projector = h.projector({
      rebuildBatchSize: BATCH,
      hooks: {
        beforeCommit(info) {
          if (info.name !== 'timeline' || info.role !== 'building' || ++builderBatches < 4) return;
          // The process dies here: the 4th batch's rows and checkpoint are written but not committed.
          crashed ??= first;
          void first.stop();
          throw new Error('simulated crash in the middle of a rebuild batch');
        },
      },
    });
    await writeRandomHistories(h.store, { seed: 5, steps: 200, concurrency: 4 });
    await h.caughtUp();
    const { version } = await h.rebuild('timeline');
    await eventually(() => crashed !== null, { what: 'the rebuild to crash', timeoutMs: 10_000, intervalMs: 25 });
    expect(crashed).not.toBeNull();
    await first.stop();

    // What survived the crash: three whole batches, not a row more.
    const checkpoint = (await readCheckpoint(h.sql, 'timeline', version))!.position!;
    const {
      rows: [counts],
    } = await h.sql.query<{ rows: string | number; last: string | null }>(
      `select count(*) as rows, max(position) as last from read_models.timeline_v${version}`,
    );
    const log = await h.store.readAll({ maxCount: 1_000_000 });
    const upToCheckpoint = log.filter((e) => e.position <= checkpoint);
    expect(upToCheckpoint).toHaveLength(3 * BATCH);
    expect(Number(counts.rows)).toBe(upToCheckpoint.filter((e) => e.streamId.startsWith('execution-')).length);
    expect(counts.last === null || counts.last <= checkpoint).toBe(true);

    // Two new processes race to take over while commands keep coming.
    const committed: (BatchInfo & { by: string })[] = [];
    const watcher = (by: string) => ({
      afterCommit: (info: BatchInfo) => {
        if (info.name === 'timeline' && info.version === version && (info.role === 'building' || info.switched))
          committed.push({ ...info, by });
      },
    });
    h.projector({ rebuildBatchSize: BATCH, hooks: watcher('second') });
    h.projector({ rebuildBatchSize: BATCH, hooks: watcher('third') });
    await writeRandomHistories(h.store, { seed: 6, steps: 80, concurrency: 4 });
    await h.switched('timeline', version);
    await h.caughtUp();

    expect(new Set(committed.map((c) => c.by)).size).toBe(1);
    const positions = committed.map((c) => c.position);
    expect([...positions].sort()).toEqual(positions);
    const switchedAt = committed.find((c) => c.switched)!;
    const logAtSwitch = (await h.store.readAll({ maxCount: 1_000_000 })).filter((e) => e.position <= switchedAt.position);
    // Every log event counted once: three batches before the crash, the rest after it.
    expect(3 * BATCH + committed.filter((c) => c.position <= switchedAt.position).reduce((n, c) => n + c.events, 0)).toBe(
      logAtSwitch.length,
    );
    await h.expectModelsEqualTheLog();
  });
});
