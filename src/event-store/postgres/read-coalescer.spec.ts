import { describe, expect, it } from '@jest/globals';
import { ReadCoalescer } from './read-coalescer.js';

/** A read whose answer the test gives by hand; `sent` counts the reads that left. */
function manualReads() {
  const answers: { resolve(value: number): void; reject(error: unknown): void }[] = [];
  return {
    answers,
    run: () =>
      new Promise<number>((resolve, reject) => {
        answers.push({ resolve, reject });
      }),
  };
}

const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('read coalescer', () => {
  it('sends a read at once when its key is idle', async () => {
    const reads = new ReadCoalescer<number>();
    const manual = manualReads();
    const first = reads.read('k', manual.run);
    expect(manual.answers).toHaveLength(1);
    manual.answers[0].resolve(1);
    await expect(first).resolves.toBe(1);
  });

  it('never hands a caller a read sent before its call: callers meanwhile share the next one', async () => {
    const reads = new ReadCoalescer<number>();
    const manual = manualReads();
    const early = reads.read('k', manual.run);
    const late = [reads.read('k', manual.run), reads.read('k', manual.run), reads.read('k', manual.run)];
    expect(manual.answers).toHaveLength(1);
    manual.answers[0].resolve(1);
    await expect(early).resolves.toBe(1);
    await settled();
    // One more read, sent after every late call was made, answers all of them.
    expect(manual.answers).toHaveLength(2);
    manual.answers[1].resolve(2);
    await expect(Promise.all(late)).resolves.toEqual([2, 2, 2]);
    // Idle again: the next call reads at once.
    void reads.read('k', manual.run);
    expect(manual.answers).toHaveLength(3);
  });

  it('keeps keys apart', async () => {
    const reads = new ReadCoalescer<number>();
    const manual = manualReads();
    const a = reads.read('a', manual.run);
    const b = reads.read('b', manual.run);
    expect(manual.answers).toHaveLength(2);
    manual.answers[0].resolve(1);
    manual.answers[1].resolve(2);
    await expect(Promise.all([a, b])).resolves.toEqual([1, 2]);
  });

  it('fails only the callers of the read that failed, and goes on after it', async () => {
    const reads = new ReadCoalescer<number>();
    const manual = manualReads();
    const early = reads.read('k', manual.run);
    const late = reads.read('k', manual.run);
    manual.answers[0].reject(new Error('connection lost'));
    await expect(early).rejects.toThrow('connection lost');
    await settled();
    manual.answers[1].resolve(7);
    await expect(late).resolves.toBe(7);
  });
});
