import { afterEach, describe, expect, it } from '@jest/globals';
import { checkpointRefusal, holdLiveForSwitch, moveCheckpoint, readCheckpoint } from '../../src/projector/projection-catalog.js';
import { HARNESS_KINDS, openProjectionHarness, type ProjectionHarness } from './support/projection-harness.js';
import { writeRandomHistories } from './support/random-history.js';

const position = (n: number) => `${String(n).padStart(20, '0')}-${'0'.padStart(19, '0')}`;

/**
 * Promise 9 (docs/architecture.md) under steady traffic: a rebuild that has reached the head of the log asks the live
 * version to stand still until it has switched; the hold is bounded, so a builder that dies
 * holds nothing for long.
 */
describe.each(HARNESS_KINDS)('the switch hold on %s', (kind) => {
  let harness: ProjectionHarness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  /** 'advanced', or why the checkpoint refused to move (the transaction then rolled back). */
  const advance = (h: ProjectionHarness, from: string | null, to: string) =>
    h.sql
      .transaction(async (tx) => moveCheckpoint(tx, 'timeline', 1, from, to, 1))
      .then(
        () => 'advanced',
        (error: unknown) => checkpointRefusal(error) ?? Promise.reject(error),
      );

  it('keeps the live checkpoint still while held, and lets it move once the hold has expired', async () => {
    const h = (harness = await openProjectionHarness(kind));
    expect(await advance(h, null, position(1))).toBe('advanced');
    const { version } = await h.rebuild('timeline');

    await holdLiveForSwitch(h.sql, 'timeline', version, 60_000);
    expect(await advance(h, position(1), position(2))).toBe('held');
    expect((await readCheckpoint(h.sql, 'timeline', 1))!.position).toBe(position(1));

    // The builder died: its hold runs out (here, at once) and the live version moves again.
    await h.sql.query(`update projector.projections set switch_hold_until = now() - interval '1 second' where name = 'timeline'`);
    expect(await advance(h, position(1), position(2))).toBe('advanced');
    expect((await readCheckpoint(h.sql, 'timeline', 1))!.position).toBe(position(2));
  });

  it('is only granted to the version being built', async () => {
    const h = (harness = await openProjectionHarness(kind));
    await advance(h, null, position(1));
    const { version } = await h.rebuild('timeline');

    await holdLiveForSwitch(h.sql, 'timeline', version + 1, 60_000);
    expect(await advance(h, position(1), position(2))).toBe('advanced');
  });

  it('applies a live batch refused while held exactly once when it goes through, whatever the refused attempt remembered', async () => {
    const h = (harness = await openProjectionHarness(kind));
    let batches = 0;
    let refused = 0;
    h.projector({
      hooks: {
        beforeCommit(info) {
          // Every other batch of the live read models is refused after its fold, as a hold refuses it.
          if (info.role !== 'live' || ++batches % 2 !== 0) return;
          refused += 1;
          throw Object.assign(new Error('held for a switch (simulated)'), { code: 'FLH01' });
        },
      },
    });
    await writeRandomHistories(h.store, { seed: 17, steps: 240, concurrency: 4 });
    await h.caughtUp();
    expect(refused).toBeGreaterThan(0);
    await h.expectModelsEqualTheLog();
  });

  it('still fences a writer whose expected checkpoint is not the stored one', async () => {
    const h = (harness = await openProjectionHarness(kind));
    await advance(h, null, position(3));
    expect(await advance(h, position(1), position(4))).toBe('fenced');
    expect((await readCheckpoint(h.sql, 'timeline', 1))!.position).toBe(position(3));
  });
});
