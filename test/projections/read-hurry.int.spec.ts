import { afterEach, describe, expect, it } from '@jest/globals';
import { createLogger } from '../../src/core/logger.js';
import { liveCheckpoint } from '../../src/projector/projection-catalog.js';
import { ProjectionSignals } from '../../src/projector/projection-signals.js';
import { Projector, type ProjectorOptions } from '../../src/projector/projector.js';
import { ReadConsistency } from '../../src/projector/read-consistency.js';
import { ReadModelSettings } from '../../src/projector/projector.settings.js';
import { PROJECTION_DEFINITIONS } from '../../projections/projections.registry.js';
import { eventually } from '../support/eventually.js';
import { HARNESS_KINDS, openProjectionHarness, type ProjectionHarness } from './support/projection-harness.js';
import { writeRandomHistories } from './support/random-history.js';

/**
 * Under load a live read model holds a short batch back for more to share its transaction (the
 * projector's `gatherMs`). A query that waits for it must not wait that out: the reader hurries
 * the batch along, directly in the projector's process, by NOTIFY from any other.
 */
describe.each(HARNESS_KINDS)('a read-your-writes query on %s', (kind) => {
  let harness: ProjectionHarness | undefined;
  let projector: Projector | undefined;
  let signals: ProjectionSignals | undefined;
  let readerSignals: ProjectionSignals | undefined;
  afterEach(async () => {
    await projector?.stop();
    await signals?.close();
    await readerSignals?.close();
    await harness?.close();
    harness = projector = signals = readerSignals = undefined;
  });

  /** A projector holding back every batch after the first far longer than a query may wait. */
  async function holdingProjector(h: ProjectionHarness, options: Partial<ProjectorOptions> = {}): Promise<void> {
    signals = new ProjectionSignals(h.sql);
    // A window far longer than the query may wait: only a hurry lets a held batch go in time.
    projector = new Projector({
      sql: h.sql,
      store: h.store,
      definitions: PROJECTION_DEFINITIONS,
      signals,
      logger: createLogger({ level: 'silent' }),
      options: { reconcileIntervalMs: 50, gatherMs: 120_000, liveGatherMs: 120_000, ...options },
    });
    projector.start();
    // The first batch after a quiet spell goes at once; once both runners have committed one,
    // every later append comes within the window and is held back until something hurries it.
    await writeRandomHistories(h.store, { seed: 20, steps: 4, concurrency: 1 });
    await eventually(
      async () => (await liveCheckpoint(h.sql, 'executions')) !== null && (await liveCheckpoint(h.sql, 'timeline')) !== null,
      'both runners to commit a first batch',
    );
    await writeRandomHistories(h.store, { seed: 21, steps: 60, concurrency: 4 });
  }

  function readerOn(h: ProjectionHarness, readerSignals: ProjectionSignals): ReadConsistency {
    const settings = new ReadModelSettings();
    settings.tune({ readWaitMs: 30_000 });
    return new ReadConsistency(h.store, h.sql, readerSignals, settings);
  }

  it.each([
    ['a runner of its own process is holding back, hurried directly', 'same process'],
    ['a projector of another process is holding back, whose runner hears the hurry by NOTIFY', 'other process'],
  ] as const)('gets the batch %s, without waiting out the window', async (_, where) => {
    harness = await openProjectionHarness(kind);
    const h = harness;
    await holdingProjector(h);
    const head = (await h.store.headPosition())!;
    // Signals with no runner behind them, on connections of its own: an api-only process.
    if (where === 'other process') readerSignals = new ProjectionSignals(h.sqlOfAnotherProcess());
    const consistency = readerOn(h, readerSignals ?? signals!);

    await consistency.waitFor('executions', { kind: 'latest' });
    expect((await liveCheckpoint(h.sql, 'executions'))! >= head).toBe(true);
    await consistency.waitFor('timeline', { kind: 'position', position: head });
    expect((await liveCheckpoint(h.sql, 'timeline'))! >= head).toBe(true);
  });

  const untilTimelineReaches = (h: ProjectionHarness, head: string) =>
    eventually(async () => ((await liveCheckpoint(h.sql, 'timeline')) ?? '') >= head, `the timeline to reach ${head}`);

  it.each(['same process', 'other process'] as const)(
    'keeps the timeline fresh while a live stream of the %s follows it, the read models still batching',
    async (where) => {
      harness = await openProjectionHarness(kind);
      const h = harness;
      await holdingProjector(h, { liveGatherMs: 10 });
      const head = (await h.store.headPosition())!;
      // Nobody follows the timeline: it batches like any read model.
      expect(((await liveCheckpoint(h.sql, 'timeline')) ?? '') < head).toBe(true);

      if (where === 'other process') readerSignals = new ProjectionSignals(h.sqlOfAnotherProcess());
      const release = (readerSignals ?? signals!).watch('timeline');
      await untilTimelineReaches(h, head);
      // Followed, it holds batches back its short window only, with no reader waiting for it.
      await writeRandomHistories(h.store, { seed: 22, steps: 60, concurrency: 4 });
      const later = (await h.store.headPosition())!;
      await untilTimelineReaches(h, later);
      expect(((await liveCheckpoint(h.sql, 'executions')) ?? '') < later).toBe(true);
      release();
    },
  );
});
