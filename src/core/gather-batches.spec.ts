import { describe, expect, it } from '@jest/globals';
import { sleep } from '../../test/support/eventually.js';
import { gatherBatches } from './gather-batches.js';

type Item = { batch: number[] } | { error: Error } | { end: true };

/**
 * A subscription the test feeds by hand. It waits for the next pushed item or for its signal,
 * like the store's subscription waits for appends, and records whether it was closed.
 */
function scriptedSource() {
  const queue: Item[] = [];
  let wake: () => void = () => undefined;
  const state = { closed: false, signal: null as AbortSignal | null };
  const push = (item: Item) => {
    queue.push(item);
    wake();
  };
  async function* open(signal: AbortSignal): AsyncGenerator<number[]> {
    state.signal = signal;
    try {
      while (!signal.aborted) {
        const item = queue.shift();
        if (item === undefined) {
          await new Promise<void>((resolve) => {
            wake = resolve;
            signal.addEventListener('abort', () => resolve(), { once: true });
          });
          continue;
        }
        if ('end' in item) return;
        if ('error' in item) throw item.error;
        yield item.batch;
      }
    } finally {
      state.closed = true;
    }
  }
  return { push, open, state };
}

/** A reader that waits for what is gathered, and says so when the test tells it to. */
function hurrier() {
  const cuts = new Set<() => void>();
  return {
    subscribe: (cut: () => void) => {
      cuts.add(cut);
      return () => cuts.delete(cut);
    },
    now: () => cuts.forEach((cut) => cut()),
    subscribers: () => cuts.size,
  };
}

const LONG = 60_000; // a window that never ends within a test: only a full batch or the source's end closes it

/** Takes a first batch, which goes alone: the batches pushed after it are streaming in. */
async function streaming(source: ReturnType<typeof scriptedSource>, gathered: AsyncGenerator<number[]>): Promise<void> {
  source.push({ batch: [0] });
  expect((await gathered.next()).value).toEqual([0]);
}

describe('gatherBatches', () => {
  it('lets a batch after a quiet spell go at once, and merges the short batches streaming in after it until maxCount', async () => {
    const source = scriptedSource();
    const gathered = gatherBatches(source.open, { windowMs: LONG, maxCount: 4, signal: new AbortController().signal });
    await streaming(source, gathered); // nothing came before the first batch: it went at once
    source.push({ batch: [1] });
    source.push({ batch: [2, 3] });
    source.push({ batch: [4, 5] });
    source.push({ batch: [6] });
    expect((await gathered.next()).value).toEqual([1, 2, 3, 4, 5]);
    await gathered.return(undefined);
  });

  it('passes a full batch on without waiting for more', async () => {
    const source = scriptedSource();
    const gathered = gatherBatches(source.open, { windowMs: LONG, maxCount: 2, signal: new AbortController().signal });
    source.push({ batch: [1, 2] });
    expect((await gathered.next()).value).toEqual([1, 2]);
    await gathered.return(undefined);
  });

  it('lets a short batch go alone once its window has passed', async () => {
    const source = scriptedSource();
    // Long enough that [1] surely comes inside the window of [0] and waits it out.
    const gathered = gatherBatches(source.open, { windowMs: 50, maxCount: 100, signal: new AbortController().signal });
    await streaming(source, gathered);
    source.push({ batch: [1] });
    expect((await gathered.next()).value).toEqual([1]);
    source.push({ batch: [2] });
    expect((await gathered.next()).value).toEqual([2]);
    await gathered.return(undefined);
  });

  it('never waits with a window of 0, even for a batch right behind another', async () => {
    const source = scriptedSource();
    const gathered = gatherBatches(source.open, { windowMs: 0, maxCount: 100, signal: new AbortController().signal });
    await streaming(source, gathered);
    source.push({ batch: [1] });
    expect((await gathered.next()).value).toEqual([1]);
    await gathered.return(undefined);
  });

  it('delivers what it gathered at once when hurried during its window, then gathers again', async () => {
    const source = scriptedSource();
    const hurry = hurrier();
    const gathered = gatherBatches(source.open, {
      windowMs: LONG,
      maxCount: 100,
      signal: new AbortController().signal,
      hurry: hurry.subscribe,
    });
    await streaming(source, gathered);
    source.push({ batch: [1] });
    source.push({ batch: [2] });
    const next = gathered.next();
    await sleep(20); // [1, 2] wait in the window
    hurry.now();
    expect((await next).value).toEqual([1, 2]);
    // The hurry was for that batch: the next one streaming in waits again, until the source ends.
    source.push({ batch: [3] });
    source.push({ batch: [4] });
    source.push({ end: true });
    expect((await gathered.next()).value).toEqual([3, 4]);
    expect((await gathered.next()).done).toBe(true);
    expect(hurry.subscribers()).toBe(0);
  });

  it('lets the next batch go without waiting when hurried between batches', async () => {
    const source = scriptedSource();
    const hurry = hurrier();
    const gathered = gatherBatches(source.open, {
      windowMs: LONG,
      maxCount: 100,
      signal: new AbortController().signal,
      hurry: hurry.subscribe,
    });
    await streaming(source, gathered);
    hurry.now(); // a reader waits while nothing is gathering
    source.push({ batch: [1] });
    expect((await gathered.next()).value).toEqual([1]);
    await gathered.return(undefined);
    expect(hurry.subscribers()).toBe(0);
  });

  it('delivers what it gathered when the source ends, then ends', async () => {
    const source = scriptedSource();
    const gathered = gatherBatches(source.open, { windowMs: LONG, maxCount: 100, signal: new AbortController().signal });
    await streaming(source, gathered);
    source.push({ batch: [1] });
    source.push({ batch: [2] });
    source.push({ end: true });
    expect(await gathered.next()).toEqual({ done: false, value: [1, 2] });
    expect(await gathered.next()).toEqual({ done: true, value: undefined });
    expect(source.state.closed).toBe(true);
  });

  it('delivers what it gathered before a failure of the source, then throws it', async () => {
    const source = scriptedSource();
    const gathered = gatherBatches(source.open, { windowMs: LONG, maxCount: 100, signal: new AbortController().signal });
    await streaming(source, gathered);
    source.push({ batch: [1] });
    source.push({ batch: [2] });
    source.push({ error: new Error('connection lost') });
    expect((await gathered.next()).value).toEqual([1, 2]);
    await expect(gathered.next()).rejects.toThrow('connection lost');
  });

  it('closes the source when the consumer stops while a read is waiting', async () => {
    const source = scriptedSource();
    const gathered = gatherBatches(source.open, { windowMs: 5, maxCount: 100, signal: new AbortController().signal });
    source.push({ batch: [1] });
    expect((await gathered.next()).value).toEqual([1]);
    // The source now waits for an append that never comes; stopping must not wait for one.
    await gathered.return(undefined);
    expect(source.state.signal?.aborted).toBe(true);
    expect(source.state.closed).toBe(true);
  });

  it('ends without delivering what it gathered when the caller aborts', async () => {
    const source = scriptedSource();
    const abort = new AbortController();
    const gathered = gatherBatches(source.open, { windowMs: LONG, maxCount: 100, signal: abort.signal });
    await streaming(source, gathered);
    source.push({ batch: [1] });
    const next = gathered.next();
    // Let the first batch arrive and its window open before aborting.
    await new Promise((resolve) => setImmediate(resolve));
    abort.abort();
    expect(await next).toEqual({ done: true, value: undefined });
    expect(source.state.closed).toBe(true);
  });
});
