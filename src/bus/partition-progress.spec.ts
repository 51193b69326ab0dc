import { describe, expect, it } from '@jest/globals';
import { PartitionProgress } from './partition-progress.js';

describe('PartitionProgress', () => {
  it('commits nothing before anything started', () => {
    expect(new PartitionProgress().committable()).toBeNull();
  });

  it('commits just past the longest finished prefix when messages finish out of order', () => {
    const progress = new PartitionProgress();
    for (const offset of [10n, 11n, 12n, 13n]) progress.start(offset);
    progress.finish(12n);
    progress.finish(13n);
    expect(progress.committable()).toBe(10n);
    progress.finish(10n);
    expect(progress.committable()).toBe(11n);
    progress.finish(11n);
    expect(progress.committable()).toBe(14n);
  });

  it('waits for both runs of a message delivered twice', () => {
    const progress = new PartitionProgress();
    progress.start(5n);
    progress.start(5n);
    progress.start(6n);
    progress.finish(6n);
    progress.finish(5n);
    expect(progress.committable()).toBe(5n);
    progress.finish(5n);
    expect(progress.committable()).toBe(7n);
  });
});
