import { afterEach, describe, expect, it } from '@jest/globals';
import { createLogger } from '../../src/core/logger.js';
import { ProjectionRunner } from '../../src/projector/projection-runner.js';
import { ProjectionSignals } from '../../src/projector/projection-signals.js';
import { PROJECTION_DEFINITIONS } from '../../projections/projections.registry.js';
import { HARNESS_KINDS, openProjectionHarness, type ProjectionHarness } from './support/projection-harness.js';
import { writeRandomHistories } from './support/random-history.js';

/**
 * A runner told to stop (its process shuts down, or its lock was lost) must stop whenever the
 * signal comes, including while it is still reading its checkpoint: a runner that kept going
 * would hold a shutdown forever, or apply batches without the lock that makes it the only one.
 */
describe.each(HARNESS_KINDS)('a projection runner on %s', (kind) => {
  let harness: ProjectionHarness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  it.each(['executions', 'timeline'])('stops when aborted while it reads its %s checkpoint', async (name) => {
    harness = await openProjectionHarness(kind);
    const h = harness;
    await writeRandomHistories(h.store, { seed: 11, steps: 20 });
    // The read models have applied the whole log: a runner started now finds nothing to read.
    const projector = h.projector();
    await h.caughtUp();
    await projector.stop();
    const signals = new ProjectionSignals(h.sql);
    const runner = new ProjectionRunner({
      sql: h.sql,
      store: h.store,
      definition: PROJECTION_DEFINITIONS.find((d) => d.name === name)!,
      version: 1,
      role: 'live',
      batchSize: 100,
      gatherMs: 0,
      signals,
      log: createLogger({ level: 'silent' }),
    });
    const controller = new AbortController();
    const ending = runner.run(controller.signal);
    controller.abort(); // the runner is waiting for its checkpoint now

    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      ending,
      new Promise((resolve) => (timer = setTimeout(() => resolve('still running 10 s after the abort'), 10_000))),
    ]);
    clearTimeout(timer);
    await signals.close();
    expect(outcome).toBe('stopped');
  });
});
