import { afterEach, describe, expect, it } from '@jest/globals';
import { createLogger } from '../../src/core/logger.js';
import { liveCheckpoint } from '../../src/projector/projection-catalog.js';
import { ProjectionSignals } from '../../src/projector/projection-signals.js';
import { Projector } from '../../src/projector/projector.js';
import { ReadConsistency } from '../../src/projector/read-consistency.js';
import { ReadModelSettings } from '../../src/projector/projector.settings.js';
import { PROJECTION_DEFINITIONS } from '../../projections/projections.registry.js';
import { HARNESS_KINDS, openProjectionHarness, type ProjectionHarness } from './support/projection-harness.js';
import { writeRandomHistories } from './support/random-history.js';

/**
 * Under load a live read model holds a short batch back for more to share its transaction (the
 * projector's `gatherMs`). A query that waits for it must not wait that out: a reader in the
 * projector's process hurries the batch along.
 */
describe.each(HARNESS_KINDS)('a read-your-writes query on %s', (kind) => {
  let harness: ProjectionHarness | undefined;
  let projector: Projector | undefined;
  let signals: ProjectionSignals | undefined;
  afterEach(async () => {
    await projector?.stop();
    await signals?.close();
    await harness?.close();
    harness = projector = signals = undefined;
  });

  it('gets the batch a runner of its process is holding back, without waiting out the window', async () => {
    harness = await openProjectionHarness(kind);
    const h = harness;
    signals = new ProjectionSignals(h.sql);
    // A window far longer than the query may wait: only a hurry lets a held batch go in time.
    projector = new Projector({
      sql: h.sql,
      store: h.store,
      definitions: PROJECTION_DEFINITIONS,
      signals,
      logger: createLogger({ level: 'silent' }),
      options: { reconcileIntervalMs: 50, gatherMs: 120_000 },
    });
    projector.start();
    // Appends streaming in: after the first batch, the runners hold what follows back.
    await writeRandomHistories(h.store, { seed: 21, steps: 60, concurrency: 4 });
    const head = (await h.store.headPosition())!;
    const settings = new ReadModelSettings();
    settings.tune({ readWaitMs: 30_000 });
    const consistency = new ReadConsistency(h.store, h.sql, signals, settings);

    await consistency.waitFor('executions', { kind: 'latest' });
    expect((await liveCheckpoint(h.sql, 'executions'))! >= head).toBe(true);
    await consistency.waitFor('timeline', { kind: 'position', position: head });
    expect((await liveCheckpoint(h.sql, 'timeline'))! >= head).toBe(true);
  });
});
