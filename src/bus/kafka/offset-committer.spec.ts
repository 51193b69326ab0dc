import { describe, expect, it } from '@jest/globals';
import type { Consumer } from 'kafkajs';
import { createLogger } from '../../core/logger.js';
import { flushEventLoop } from '../../../test/support/worker/dag/deferred.js';
import { OffsetCommitter } from './offset-committer.js';

type Commit = { partition: number; offset: string }[];

/** The one consumer call the committer makes, recorded; `failNext` makes the next one fail. */
function recordingConsumer() {
  const commits: Commit[] = [];
  const state = { failNext: false };
  const consumer = {
    async commitOffsets(offsets: { topic: string; partition: number; offset: string }[]) {
      if (state.failNext) {
        state.failNext = false;
        throw new Error('the coordinator moved');
      }
      commits.push(offsets.map(({ partition, offset }) => ({ partition, offset })));
    },
  } as unknown as Consumer;
  return { consumer, commits, state };
}

const log = createLogger({ level: 'silent' });

describe('OffsetCommitter', () => {
  it('commits the first finished offset at once and folds later ones into the next commit, after the interval', async () => {
    const { consumer, commits } = recordingConsumer();
    const committer = new OffsetCommitter(consumer, 'flostra.results.v1', log, 60_000);
    committer.advance(0, 1n);
    await flushEventLoop();
    expect(commits).toEqual([[{ partition: 0, offset: '1' }]]);

    committer.advance(0, 2n);
    committer.advance(1, 7n);
    committer.advance(0, 3n);
    await flushEventLoop();
    expect(commits).toHaveLength(1); // within the interval: waiting for more

    await committer.flush(); // stopping or rebalancing: commit now
    expect(commits).toEqual([
      [{ partition: 0, offset: '1' }],
      [
        { partition: 0, offset: '3' },
        { partition: 1, offset: '7' },
      ],
    ]);
  });

  it('never moves a partition backwards, and commits nothing already committed', async () => {
    const { consumer, commits } = recordingConsumer();
    const committer = new OffsetCommitter(consumer, 't', log);
    committer.advance(0, 5n);
    await committer.flush();
    committer.advance(0, 4n);
    committer.advance(0, 5n);
    await committer.flush();
    expect(commits).toEqual([[{ partition: 0, offset: '5' }]]);
  });

  it('commits again after a failed commit, with the offsets it still owes', async () => {
    const { consumer, commits, state } = recordingConsumer();
    const committer = new OffsetCommitter(consumer, 't', log);
    state.failNext = true;
    committer.advance(0, 2n);
    await committer.flush();
    expect(commits).toEqual([]);
    committer.advance(0, 3n);
    await committer.flush();
    expect(commits).toEqual([[{ partition: 0, offset: '3' }]]);
  });
});
